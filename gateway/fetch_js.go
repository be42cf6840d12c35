//go:build js

package gateway

import (
	"context"
	"errors"
	"io"
	"syscall/js"

	"github.com/lifeline-go/lifeline/internal/tinyfmt"
)

// doHTTP makes one request with the browser's fetch: with the page's cookies (credentials
// "include", as a WebSocket's handshake carries them), past every cache, following no
// redirect (the endpoint's own answer is what counts). Ending ctx aborts the request and the
// reading of its body. The answer's body is read chunk by chunk as it arrives (a
// ReadableStream), so a text/event-stream is read as the Host writes it.
func doHTTP(ctx context.Context, req httpRequest) (ans *httpAnswer, err error) {
	defer func() {
		// syscall/js panics when the browser throws synchronously (a URL fetch refuses).
		if p := recover(); p != nil {
			ans, err = nil, tinyfmt.Errorf("gateway: %s %s: %s", req.method, req.url, thrown(p))
		}
	}()
	ac := js.Global().Get("AbortController").New()
	abort := func() { ac.Call("abort") }
	init := map[string]any{
		"method":      req.method,
		"credentials": "include",
		"cache":       "no-store",
		"redirect":    "manual",
		"signal":      ac.Get("signal"),
	}
	if req.body != nil {
		init["body"] = string(req.body)
		init["headers"] = map[string]any{"Content-Type": req.contentType}
	}
	resp, err := await(ctx, js.Global().Call("fetch", req.url, init), abort)
	if err != nil {
		return nil, tinyfmt.Errorf("gateway: %s %s: %w", req.method, req.url, err)
	}
	headers := resp.Get("headers")
	header := func(name string) string {
		v := headers.Call("get", name)
		if v.Type() != js.TypeString {
			return ""
		}
		return v.String()
	}
	a := &httpAnswer{
		status:      resp.Get("status").Int(),
		contentType: header("Content-Type"),
		retryAfter:  header("Retry-After"),
		close:       abort,
	}
	body := resp.Get("body")
	if body.IsNull() || body.IsUndefined() {
		a.next = func(context.Context) ([]byte, error) { return nil, io.EOF }
		return a, nil
	}
	reader := body.Call("getReader")
	a.next = func(ctx context.Context) ([]byte, error) {
		r, err := await(ctx, reader.Call("read"), abort)
		if err != nil {
			return nil, err
		}
		if r.Get("done").Truthy() {
			return nil, io.EOF
		}
		v := r.Get("value")
		b := make([]byte, v.Length())
		js.CopyBytesToGo(b, v)
		return b, nil
	}
	return a, nil
}

// errAborted is what a request ended by its context reports when the context gives no cause.
var errAborted = errors.New("gateway: request aborted")

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
		settle(result{err: tinyfmt.Errorf("gateway: fetch failed: %s", jsString(arg0(args)))})
		return nil
	})
	p.Call("then", onOK, onErr)
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		abort()
		if err := context.Cause(ctx); err != nil {
			return js.Value{}, err
		}
		return js.Value{}, errAborted
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
