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

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	uzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// newLogger builds the manager's logger from the --zap-* flags. Without
// --zap-devel it is controller-runtime's production logger (JSON, level
// info, stack traces from errors, RFC 3339 times) minus its sampling: zap's
// production sampler keeps, per message and second, the first 100 lines
// and then one in 100, so a DryRun cascade of thousands of objects would
// log a few hundred of its "Dry run: would delete" decisions, and the
// operator comparing them with what another collector did would miss the
// rest. Each of ownergc's per-object lines at level info is a decision
// someone may need to find.
func newLogger(o zap.Options, out io.Writer) logr.Logger {
	if o.Development {
		return zap.New(zap.UseFlagOptions(&o), zap.WriteTo(out))
	}
	level := o.Level
	if level == nil {
		level = uzap.NewAtomicLevelAt(zapcore.InfoLevel)
	}
	stack := o.StacktraceLevel
	if stack == nil {
		stack = uzap.NewAtomicLevelAt(zapcore.ErrorLevel)
	}
	timeEncoder := o.TimeEncoder
	if timeEncoder == nil {
		timeEncoder = zapcore.RFC3339TimeEncoder
	}
	encoderOptions := append([]zap.EncoderConfigOption{func(c *zapcore.EncoderConfig) { c.EncodeTime = timeEncoder }}, o.EncoderConfigOptions...)
	encoder := o.Encoder
	switch {
	case encoder != nil:
	case o.NewEncoder != nil: // --zap-encoder
		encoder = o.NewEncoder(encoderOptions...)
	default:
		config := uzap.NewProductionEncoderConfig()
		for _, opt := range encoderOptions {
			opt(&config)
		}
		encoder = zapcore.NewJSONEncoder(config)
	}
	sink := zapcore.AddSync(out)
	core := zapcore.NewCore(&zap.KubeAwareEncoder{Encoder: encoder}, sink, level)
	return zapr.NewLogger(uzap.New(core, uzap.ErrorOutput(sink), uzap.AddStacktrace(stack)))
}
