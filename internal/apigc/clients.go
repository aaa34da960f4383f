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
	"fmt"
	"net/http"

	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"
	certificatesv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Clients are the typed clients of the API groups the collectors read and
// write; a client-go clientset satisfies it (tests use the fake one).
// Production builds only these three with NewClients: a whole clientset,
// reachable through an interface, links in a client of every API group and
// their apply configurations, and its pages count in the resident memory of
// every process.
type Clients interface {
	CoreV1() corev1client.CoreV1Interface
	BatchV1() batchv1client.BatchV1Interface
	CertificatesV1() certificatesv1client.CertificatesV1Interface
}

type clients struct {
	core         *corev1client.CoreV1Client
	batch        *batchv1client.BatchV1Client
	certificates *certificatesv1client.CertificatesV1Client
}

func (c *clients) CoreV1() corev1client.CoreV1Interface    { return c.core }
func (c *clients) BatchV1() batchv1client.BatchV1Interface { return c.batch }
func (c *clients) CertificatesV1() certificatesv1client.CertificatesV1Interface {
	return c.certificates
}

// NewClients returns the collectors' clients for cfg, sharing httpClient
// (and so cfg's rate limiter, as a clientset's group clients do).
func NewClients(cfg *rest.Config, httpClient *http.Client) (Clients, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("the client's burst must be positive when its QPS is (%g)", cfg.QPS)
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	c := &clients{}
	var err error
	if c.core, err = corev1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the core/v1 client: %w", err)
	}
	if c.batch, err = batchv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the batch/v1 client: %w", err)
	}
	if c.certificates, err = certificatesv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the certificates/v1 client: %w", err)
	}
	return c, nil
}
