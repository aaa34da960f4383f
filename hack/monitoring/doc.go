// Package monitoring holds the tests of ownergc's alerts and dashboard; see
// go.mod.
package monitoring
