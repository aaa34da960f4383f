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

// Package discovery finds the resources the collector watches: every resource
// that supports list, watch and delete, at its group's preferred version. It
// keeps that set current while the manager runs: rediscovery is triggered by
// CustomResourceDefinition and APIService changes (with follow-ups, since the
// API server publishes a new resource shortly after the CRD is Established)
// and repeated on a slow timer as a safety net, faster while some group, or
// the whole discovery, fails.
//
// A group-version whose discovery fails (an aggregated API whose backend is
// down) is reported and retried; the resources previously discovered for it
// are kept, and every other group is unaffected.
//
// A resource that leaves discovery is reported removed; it is reported
// deleted (its objects are gone) only when its CustomResourceDefinition was
// observed deleted: a group switched off or an aggregated API removed takes
// its resources out of discovery while their objects still exist.
//
// ResourceFor maps a kind at a version to the resource to read it from. A
// version the API server no longer serves is resolved to the kind's preferred
// version when every version of the group is served by the API server itself
// (built-in groups and CustomResourceDefinitions, where the versions of a
// kind name the same stored objects), never for an aggregated group or a
// group whose discovery fails.
//
// Files:
//   - snapshot.go: Resource and Snapshot, the immutable result of one
//     discovery, and what it answers (ResourceFor, Resolve, ServesKind,
//     Unmatched);
//   - discoverer.go: the Discoverer, which runs discovery (on triggers, on
//     a timer, with follow-ups) and tells subscribers what changed;
//   - triggers.go: Triggers, which watches CustomResourceDefinitions and
//     APIServices and asks for a rediscovery on every change;
//   - mapper.go: Mapper, the manager's meta.RESTMapper over the snapshots;
//   - client.go: Client, client-go's discovery client asking for the
//     aggregated discovery documents in protobuf.
//
// The package imports nothing from the rest of the module.
package discovery
