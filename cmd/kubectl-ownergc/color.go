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
	"io"
	"os"

	"golang.org/x/term"
)

// useColor reports whether w is a terminal that should get colours: not
// when NO_COLOR is set (https://no-color.org), nor with TERM=dumb.
func useColor(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// painter colours text, or leaves it alone.
type painter bool

// SGR codes.
const (
	red    = "31"
	yellow = "33"
	bold   = "1"
)

func (p painter) paint(code, s string) string {
	if !p || s == "" || code == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
