//go:build js

package gateway_test

import "testing"

// inBubble runs f as it is: under js/wasm the page's socket is the browser's, whose events
// come from outside any synctest bubble, so f runs on the real clock against
// LIFELINE_TEST_SERVER (see bubble_notjs_test.go).
func inBubble(t *testing.T, f func(t *testing.T)) { f(t) }
