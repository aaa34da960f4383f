/*
Copyright 2026 The ownergc Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package graph

import (
	"k8s.io/apimachinery/pkg/types"
)

// uidKey is a UID as the graph keeps it. UIDs are opaque strings, but the
// ones the API server assigns are UUIDs in canonical form (36 characters:
// lowercase hexadecimal digits in groups of 8, 4, 4, 4 and 12, joined by
// dashes), and those are kept as their 16 bytes: 32 of the 64 bytes a UID
// string costs each node. Any other UID is kept as it is, escaped so that
// the two forms never meet: a UID of 16 bytes, or a longer one ending with
// the escape byte, gets one more escape byte at its end. So the key of a
// UID is unique, and the UID comes back exactly.
type uidKey string

const (
	uuidLen   = 36
	keyLen    = 16
	uidEscape = "\xff"
)

// parseUUID decodes s into dst if it is a UUID in canonical form.
func parseUUID(dst *[keyLen]byte, s string) bool {
	if len(s) != uuidLen || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	j := 0
	for i := 0; i < uuidLen; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := fromHex(s[i])
		lo, ok2 := fromHex(s[i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[j] = hi<<4 | lo
		j++
		i += 2
	}
	return true
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// escaped reports whether a UID that is not a canonical UUID needs the
// escape byte.
func escaped(s string) bool {
	return len(s) == keyLen || (len(s) > keyLen && s[len(s)-1] == uidEscape[0])
}

// uidKeyOf returns the key of u, in new memory.
func uidKeyOf(u types.UID) uidKey {
	var b [keyLen]byte
	if parseUUID(&b, string(u)) {
		return uidKey(b[:])
	}
	if escaped(string(u)) {
		return uidKey(string(u) + uidEscape)
	}
	return uidKey(u)
}

// UID returns the UID the key stands for.
func (k uidKey) UID() types.UID {
	switch {
	case len(k) == keyLen:
		const hex = "0123456789abcdef"
		var b [uuidLen]byte
		j := 0
		for i := 0; i < keyLen; i++ {
			if i == 4 || i == 6 || i == 8 || i == 10 {
				b[j] = '-'
				j++
			}
			b[j], b[j+1] = hex[k[i]>>4], hex[k[i]&0x0f]
			j += 2
		}
		return types.UID(b[:])
	case len(k) > keyLen && k[len(k)-1] == uidEscape[0]:
		return types.UID(k[:len(k)-1])
	}
	return types.UID(k)
}

// is reports whether k is the key of u, without allocating.
func (k uidKey) is(u types.UID) bool {
	var b [keyLen]byte
	if parseUUID(&b, string(u)) {
		return string(k) == string(b[:])
	}
	if escaped(string(u)) {
		return len(k) == len(u)+1 && string(k[:len(u)]) == string(u) && k[len(u)] == uidEscape[0]
	}
	return string(k) == string(u)
}

// nodeOf returns the node with UID u, without allocating (but for an
// escaped UID, which is rare).
func (g *Graph) nodeOf(u types.UID) (*Node, bool) {
	var b [keyLen]byte
	if parseUUID(&b, string(u)) {
		return g.uids.get(uidKey(b[:]))
	}
	if escaped(string(u)) {
		return g.uids.get(uidKey(string(u) + uidEscape))
	}
	return g.uids.get(uidKey(u))
}
