//go:build js

package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall/js"
	"time"

	"github.com/lifeline-go/lifeline/gateway/wire"
)

// refusalQueryTimeout bounds the refusal query. It runs inside the attempt, after its dial
// failed, so the attempt's deadline bounds it too; a Host too slow to answer a GET in this
// long is treated as one that did not say why.
const refusalQueryTimeout = 2 * time.Second

// queryRefusal asks the Host why the browser's dial of url failed, since the WebSocket API hides the
// handshake's status: a plain GET of the same endpoint with the page's cookies, which the
// Host answers as it answered the upgrade (hostplugin's documentation, "The refusal query"; PROTOCOL.md §2.4). On a 401
// or 403 it returns the *UnauthorizedError; on anything else — another status, a network
// error, an answer the browser keeps from the page because it carries no CORS header for
// it, the timeout — it returns dialErr, unchanged. If ctx ends first it returns its cause.
func queryRefusal(ctx context.Context, url string, dialErr error) error {
	ctx, cancel := context.WithTimeoutCause(ctx, refusalQueryTimeout, errRefusalQueryTimeout)
	defer cancel()
	status, body, err := fetch(ctx, refusalQueryURL(url))
	switch {
	case ctx.Err() != nil && !errors.Is(context.Cause(ctx), errRefusalQueryTimeout):
		return context.Cause(ctx) // the attempt ended: its cause explains it
	case err != nil:
		return fmt.Errorf("%w (the refusal query could not tell why: %v)", dialErr, err)
	}
	if refused := refusedBy(status, "", body); refused != nil {
		return refused
	}
	return dialErr
}

var errRefusalQueryTimeout = errors.New("gateway: the refusal query timed out")

// refusalQueryURL is the events endpoint as fetch reaches it: ws and wss become http and https.
func refusalQueryURL(url string) string {
	if rest, ok := strings.CutPrefix(url, "ws"); ok {
		return "http" + rest
	}
	return url
}

// fetch GETs url with the page's cookies, bypassing every cache, and returns the status and,
// for a refusal of credentials, up to wire.MaxRefusalBody bytes of the body. Redirects are
// not followed: the endpoint's own answer is the one that counts. Ending ctx aborts the
// request and the reading of its body.
func fetch(ctx context.Context, url string) (status int, body []byte, err error) {
	defer func() {
		// syscall/js panics when the browser throws synchronously (a URL fetch refuses).
		if p := recover(); p != nil {
			status, body, err = 0, nil, fmt.Errorf("gateway: refusal query %s: %v", url, p)
		}
	}()
	ac := js.Global().Get("AbortController").New()
	abort := func() { ac.Call("abort") }
	resp, err := await(ctx, js.Global().Call("fetch", url, map[string]any{
		"credentials": "include",
		"cache":       "no-store",
		"redirect":    "manual",
		"signal":      ac.Get("signal"),
	}), abort)
	if err != nil {
		return 0, nil, err
	}
	status = resp.Get("status").Int()
	if refusedBy(status, "", nil) == nil {
		abort() // the body says nothing the page needs
		return status, nil, nil
	}
	text, err := await(ctx, resp.Call("text"), abort)
	if err != nil {
		return status, nil, nil // the status alone is the answer
	}
	s := text.String()
	if len(s) > wire.MaxRefusalBody {
		s = s[:wire.MaxRefusalBody]
	}
	return status, []byte(s), nil
}

// await waits for the promise p to settle, or for ctx to end: then it calls abort and
// returns the cause at once. Its callbacks release themselves when p settles, which an
// abort makes it do.
func await(ctx context.Context, p js.Value, abort func()) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	done := make(chan result, 1)
	var onOK, onErr js.Func
	settle := func(r result) {
		done <- r
		onOK.Release()
		onErr.Release()
	}
	onOK = js.FuncOf(func(_ js.Value, args []js.Value) any {
		settle(result{v: arg0(args)})
		return nil
	})
	onErr = js.FuncOf(func(_ js.Value, args []js.Value) any {
		settle(result{err: fmt.Errorf("gateway: refusal query failed: %s", jsString(arg0(args)))})
		return nil
	})
	p.Call("then", onOK, onErr)
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		abort()
		return js.Value{}, context.Cause(ctx)
	}
}

func arg0(args []js.Value) js.Value {
	if len(args) == 0 {
		return js.Undefined()
	}
	return args[0]
}

// jsString describes a rejection's reason (an Error, usually).
func jsString(v js.Value) string {
	if v.Type() == js.TypeObject {
		if m := v.Get("message"); m.Type() == js.TypeString {
			return m.String()
		}
	}
	return js.Global().Get("String").Invoke(v).String()
}
