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

package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
)

// cpuSample is one sample of a CPU profile: its stack, innermost first, and
// the CPU time it stands for.
type cpuSample struct {
	frames []string
	nanos  int64
}

// readCPUProfile reads the samples of a CPU profile as runtime/pprof writes
// it (gzipped profile.proto), decoding only what the fleet profile needs:
// samples, locations, functions and strings.
func readCPUProfile(path string) ([]cpuSample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	type location struct{ functions []uint64 }
	var (
		samples   []struct{ locs, values []uint64 }
		locations = map[uint64]location{}
		functions = map[uint64]uint64{} // id → name's string index
		strs      []string
	)
	err = eachField(data, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case 2: // sample
			var s struct{ locs, values []uint64 }
			err := eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
				switch num {
				case 1:
					s.locs = appendVarints(s.locs, typ, v, x)
				case 2:
					s.values = appendVarints(s.values, typ, v, x)
				}
				return nil
			})
			samples = append(samples, s)
			return err
		case 4: // location
			var id uint64
			var l location
			err := eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
				switch num {
				case 1:
					id = x
				case 4: // line
					return eachField(v, func(num protowire.Number, _ protowire.Type, _ []byte, x uint64) error {
						if num == 1 {
							l.functions = append(l.functions, x)
						}
						return nil
					})
				}
				return nil
			})
			locations[id] = l
			return err
		case 5: // function
			var id, name uint64
			err := eachField(v, func(num protowire.Number, _ protowire.Type, _ []byte, x uint64) error {
				switch num {
				case 1:
					id = x
				case 2:
					name = x
				}
				return nil
			})
			functions[id] = name
			return err
		case 6:
			strs = append(strs, string(v))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]cpuSample, 0, len(samples))
	for _, s := range samples {
		if len(s.values) < 2 {
			continue
		}
		cs := cpuSample{nanos: int64(s.values[1])}
		for _, id := range s.locs {
			for _, fn := range locations[id].functions {
				if i := functions[fn]; i < uint64(len(strs)) {
					cs.frames = append(cs.frames, strs[i])
				}
			}
		}
		out = append(out, cs)
	}
	return out, nil
}

// eachField calls f with every field of the protobuf message b: its value's
// bytes for a length-delimited field, its value for a varint.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

// appendVarints appends a repeated varint field's value: one varint, or
// packed ones.
func appendVarints(out []uint64, typ protowire.Type, v []byte, x uint64) []uint64 {
	if typ != protowire.BytesType {
		return append(out, x)
	}
	for len(v) > 0 {
		x, n := protowire.ConsumeVarint(v)
		if n < 0 {
			break
		}
		out = append(out, x)
		v = v[n:]
	}
	return out
}
