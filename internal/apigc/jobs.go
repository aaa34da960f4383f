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

package apigc

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ownergc/ownergc/internal/policy"
)

// The finished-Job collector, with the semantics of kube-controller-
// manager's ttl-after-finished-controller (pkg/controller/ttlafterfinished):
// a Job that is not being deleted, has spec.ttlSecondsAfterFinished, and has
// finished (its Complete or Failed condition is True) is deleted once the
// TTL has passed since that condition's lastTransitionTime; until then it
// waits in the queue for the time left. Before deleting, the collector reads
// the Job live and decides again from what it reads (the TTL may have
// changed since the cache saw it), then deletes it with Foreground
// propagation — its Pods go first, through the owner-reference collector —
// and preconditions on the UID and resourceVersion it read.

// ReasonTTLExpired is the rule of the finished-Job collector (label
// "reason" of its metrics).
const ReasonTTLExpired = "ttl_expired"

// jobWorkers is kube-controller-manager's default
// --concurrent-ttl-after-finished-syncs.
const jobWorkers = 5

// NewFinishedJobs returns the finished-Job collector.
func NewFinishedJobs(opts Options) Collector {
	return newRunner(definition[string]{
		name: "finishedJobs", metric: "finished_jobs", watches: "Jobs",
		workers: jobWorkers, metrics: opts.metricSet().FinishedJobs,
		enabled:   func(p *policy.Policy) bool { return p.Collectors.FinishedJobs.Enabled },
		affects:   func(_, _ *policy.Policy) bool { return false },
		transform: trimJobs,
		start:     startJobs,
	}, opts)
}

// jobInfo is what the collector's cache keeps of a Job.
type jobInfo struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	TTLSecondsAfterFinished *int32
	// Finished: its Complete or Failed condition is True; FinishedAt is
	// that condition's lastTransitionTime (zero when it has none).
	Finished   bool
	FinishedAt metav1.Time
}

func (j *jobInfo) DeepCopyObject() runtime.Object {
	c := *j
	j.DeepCopyInto(&c.ObjectMeta)
	if j.TTLSecondsAfterFinished != nil {
		ttl := *j.TTLSecondsAfterFinished
		c.TTLSecondsAfterFinished = &ttl
	}
	return &c
}

func trimJobs(obj any) (any, error) {
	if j, ok := obj.(*batchv1.Job); ok {
		return trimJob(j), nil
	}
	return obj, nil
}

func trimJob(j *batchv1.Job) *jobInfo {
	out := &jobInfo{ObjectMeta: trimMeta(&j.ObjectMeta)}
	if ttl := j.Spec.TTLSecondsAfterFinished; ttl != nil {
		v := *ttl
		out.TTLSecondsAfterFinished = &v
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			out.Finished, out.FinishedAt = true, c.LastTransitionTime
			break
		}
	}
	return out
}

// needsCleanup: the Job is not being deleted, has a TTL, and has finished.
func (j *jobInfo) needsCleanup() bool {
	return j.DeletionTimestamp == nil && j.TTLSecondsAfterFinished != nil && j.Finished
}

var errNoFinishTime = errors.New("the Job's Complete or Failed condition has no lastTransitionTime")

// timeLeft returns how long the Job's TTL has left at now (negative or zero
// once expired) and when it expires.
func (j *jobInfo) timeLeft(now time.Time) (time.Duration, time.Time, error) {
	if j.FinishedAt.IsZero() {
		return 0, time.Time{}, errNoFinishTime
	}
	expireAt := j.FinishedAt.Add(time.Duration(*j.TTLSecondsAfterFinished) * time.Second)
	return expireAt.Sub(now), expireAt, nil
}

// jobs is the work of one session of the finished-Job collector.
type jobs struct {
	*session[string]
	jobs toolscache.SharedIndexInformer
}

func startJobs(s *session[string]) work[string] {
	w := &jobs{session: s, jobs: newInformer(s, s.r.opts.Client.BatchV1().Jobs(metav1.NamespaceAll), &batchv1.Job{})}
	enqueue := func(obj any) {
		if j, ok := obj.(*jobInfo); ok && j.needsCleanup() {
			w.queue.Add(j.Namespace + "/" + j.Name)
		}
	}
	s.watch(w.jobs, enqueue)
	return w
}

// resync implements work.
func (w *jobs) resync() {
	for _, obj := range w.jobs.GetStore().List() {
		if j, ok := obj.(*jobInfo); ok && j.needsCleanup() {
			w.queue.Add(j.Namespace + "/" + j.Name)
		}
	}
}

// process implements work: it deletes the Job key names once its TTL has
// expired, by the cache and then by a live read; until then it queues it
// again for the time left.
func (w *jobs) process(ctx context.Context, key string) error {
	obj, exists, _ := w.jobs.GetStore().GetByKey(key)
	cached, ok := obj.(*jobInfo)
	if !exists || !ok {
		return nil
	}
	if expired, err := w.expired(key, cached); err != nil || !expired {
		return err
	}
	// The TTL may have changed since the cache saw the Job: decide again
	// from the live Job.
	client := w.r.opts.Client.BatchV1().Jobs(cached.Namespace)
	live, err := client.Get(ctx, cached.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading Job: %w", err)
	}
	fresh := trimJob(live)
	if expired, err := w.expired(key, fresh); err != nil || !expired {
		return err
	}
	d := deletion{object: &fresh.ObjectMeta, kind: "Job", reason: ReasonTTLExpired,
		detail: fmt.Sprintf("finished at %s, ttlSecondsAfterFinished %d", fresh.FinishedAt.UTC().Format(time.RFC3339), *fresh.TTLSecondsAfterFinished)}
	if !w.r.permitted(ctx, d) {
		return nil
	}
	foreground := metav1.DeletePropagationForeground
	err = client.Delete(ctx, live.Name, metav1.DeleteOptions{PropagationPolicy: &foreground,
		Preconditions: preconditions(live.UID, live.ResourceVersion)})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting Job: %w", err)
	}
	w.r.recordDeleted(ctrl.LoggerFrom(ctx), d)
	return nil
}

// expired reports whether j's TTL has expired; when it has not, it queues
// key again for the time left.
func (w *jobs) expired(key string, j *jobInfo) (bool, error) {
	if !j.needsCleanup() {
		return false, nil
	}
	left, _, err := j.timeLeft(time.Now())
	if err != nil {
		return false, fmt.Errorf("job %s: %w", key, err)
	}
	if left > 0 {
		w.queue.AddAfter(key, left)
		return false, nil
	}
	return true, nil
}
