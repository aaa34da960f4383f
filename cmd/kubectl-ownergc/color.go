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
