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

import "testing"

// The benchmark's memory readings come from /proc/<pid>/status: the
// resident set (VmRSS) and its peak (VmHWM), which is never below it; a
// field the file lacks is an error, not a zero.
func TestProcStatusBytesReadsResidentAndPeak(t *testing.T) {
	rss, err := procStatusBytes("/proc/self/status", "VmRSS")
	if err != nil || rss <= 0 {
		t.Fatalf("VmRSS: %d (%v), want a positive size", rss, err)
	}
	peak, err := procStatusBytes("/proc/self/status", "VmHWM")
	if err != nil || peak < rss {
		t.Fatalf("VmHWM: %d (%v), want at least VmRSS (%d)", peak, err, rss)
	}
	if v, err := procStatusBytes("/proc/self/status", "VmNothing"); err == nil {
		t.Fatalf("a missing field read as %d, want an error", v)
	}
}
