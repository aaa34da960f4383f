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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat;
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// procStat reads the parent pid and the CPU time (user + system, seconds)
// of a process from /proc/<pid>/stat.
func procStat(pid int) (ppid int, comm string, cpu float64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", 0, err
	}
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return 0, "", 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	comm = s[open+1 : closing]
	fields := strings.Fields(s[closing+1:])
	if len(fields) < 13 {
		return 0, "", 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	ppid, _ = strconv.Atoi(fields[1])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return ppid, comm, (utime + stime) / clockTicks, nil
}

// eachChild calls f with the pid, command name and CPU seconds of each of
// the benchmark's child processes.
func eachChild(f func(pid int, comm string, cpu float64)) {
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if ppid, comm, cpu, err := procStat(pid); err == nil && ppid == self {
			f(pid, comm, cpu)
		}
	}
}

// findChildren finds the benchmark's child processes with the given
// command names (the kube-apiserver and etcd envtest started).
func findChildren(names ...string) map[string]int {
	out := map[string]int{}
	eachChild(func(pid int, comm string, _ float64) {
		if slices.Contains(names, comm) {
			out[comm] = pid
		}
	})
	return out
}

// controlPlanesCPU is the CPU seconds of every kube-apiserver and etcd the
// benchmark started so far, together.
func controlPlanesCPU() float64 {
	var sum float64
	eachChild(func(_ int, comm string, cpu float64) {
		if comm == "kube-apiserver" || comm == "etcd" {
			sum += cpu
		}
	})
	return sum
}

// planesCPUByRole is the control planes' CPU seconds so far by role: the
// host's kube-apiserver and etcd, and the members' (every other
// kube-apiserver and etcd the benchmark started), summed.
func (b *bench) planesCPUByRole() map[string]float64 {
	host := map[int]bool{}
	for _, pid := range b.planePids {
		host[pid] = true
	}
	out := map[string]float64{}
	eachChild(func(pid int, comm string, cpu float64) {
		if comm != "kube-apiserver" && comm != "etcd" {
			return
		}
		who := "the members' "
		if host[pid] {
			who = "the host's "
		}
		out[who+comm] += cpu
	})
	return out
}

// cpuSince is what planesCPUByRole counted since before.
func cpuSince(before, now map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range now {
		out[k] = v - before[k]
	}
	return out
}

// cpuTimes are CPU seconds by process.
type cpuTimes map[string]float64

// cpuNow reads the CPU time of the collector (when p is not nil), the
// kube-apiserver, etcd and the benchmark itself.
func (b *bench) cpuNow(p *proc) cpuTimes {
	out := cpuTimes{}
	read := func(name string, pid int) {
		if pid <= 0 {
			return
		}
		if _, _, cpu, err := procStat(pid); err == nil {
			out[name] = cpu
		}
	}
	if p != nil {
		read("collector", p.Pid())
	}
	for name, pid := range b.planePids {
		read(name, pid)
	}
	read("benchmark", os.Getpid())
	if m, err := machineCPU(); err == nil {
		out[machineKey] = m
	}
	return out
}

// machineKey holds, in cpuTimes, the CPU time of the whole machine.
const machineKey = "_machine"

// machineCPU reads the busy CPU time of the whole machine from /proc/stat.
func machineCPU() (float64, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, fmt.Errorf("malformed /proc/stat")
	}
	var busy float64
	for i, f := range fields[1:9] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		v, _ := strconv.ParseFloat(f, 64)
		busy += v
	}
	return busy / clockTicks, nil
}

func (c cpuTimes) minus(o cpuTimes) cpuTimes {
	out := cpuTimes{}
	for k, v := range c {
		if ov, ok := o[k]; ok {
			out[k] = v - ov
		}
	}
	return out
}

// total sums the processes, not the machine.
func (c cpuTimes) total() float64 {
	var t float64
	for k, v := range c {
		if k != machineKey {
			t += v
		}
	}
	return t
}

func (c cpuTimes) String() string {
	var keys []string
	for k := range c {
		if k != machineKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

// waitQuiet waits until the kube-apiserver, etcd and the collector (when p
// is not nil) together use less than a fifth of a core over two consecutive
// half-second samples, for at most 30 s: work left over from creating a
// workload's objects or from a collector's start must not leak into a
// measurement.
func (b *bench) waitQuiet(p *proc) {
	const interval = 500 * time.Millisecond
	deadline := time.Now().Add(30 * time.Second)
	prev := b.cpuNow(p)
	delete(prev, "benchmark")
	delete(prev, machineKey)
	calm := 0
	for time.Now().Before(deadline) {
		time.Sleep(interval)
		cur := b.cpuNow(p)
		delete(cur, "benchmark")
		delete(cur, machineKey)
		busy := cur.minus(prev).total() / interval.Seconds()
		prev = cur
		if busy < 0.2 {
			calm++
			if calm == 2 {
				return
			}
		} else {
			calm = 0
		}
	}
	b.logf("    (the control plane did not calm down within 30 s; measuring anyway)")
}
