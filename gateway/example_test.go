package gateway_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
)

// A page's wiring: a gateway as the controller's source, a stream followed across every
// reconnect, and an orderly shutdown.
func Example() {
	gw, err := gateway.New("wss://example.com/_lifeline/events", nil)
	if err != nil {
		log.Fatal(err)
	}
	ctl, err := controller.New(gw, controller.DefaultConfig(), &controller.Options{
		OnChange: func(s controller.Status) { log.Printf("lifeline: %v", s.State) },
	})
	if err != nil {
		log.Fatal(err)
	}
	var total int
	sub := gw.Subscribe("orders", func(d gateway.Delivery) {
		var v struct{ Total int }
		if d.Reset {
			json.Unmarshal(d.Baseline, &v) // drop what we had: this is the state at d.Seq
			total = v.Total
			return
		}
		json.Unmarshal(d.Data, &v)
		total += v.Total
	})
	ctl.Start()

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
	ctl.Stop()    // cancels and settles every generation
	gw.Close(nil) // ends sub with gateway.ErrClosed
	<-sub.Done()  // its handler has returned for good
	fmt.Println(total)
}

func ExampleNew() {
	_, err := gateway.New("/_lifeline/events", nil)
	fmt.Println(err)
	gw, _ := gateway.New("https://example.com/_lifeline/events", nil)
	fmt.Println(gw.URL())
	// Output:
	// gateway: bad events URL: scheme must be ws, wss, http or https, got "" in "/_lifeline/events"
	// wss://example.com/_lifeline/events
}

func ExampleGateway_Close() {
	gw, _ := gateway.New("ws://example.com/_lifeline/events", nil)
	sub := gw.Subscribe("chat", func(gateway.Delivery) {})
	pageHidden := errors.New("page hidden")
	gw.Close(pageHidden)
	<-sub.Done()
	fmt.Println(sub.Err())
	// Output:
	// page hidden
}

func ExampleGateway_Subscribe() {
	gw, _ := gateway.New("ws://example.com/_lifeline/events", nil)
	defer gw.Close(nil)
	first := gw.Subscribe("chat", func(gateway.Delivery) {})
	gw.Subscribe("chat", func(gateway.Delivery) {}) // one subscription per stream: replaces first
	<-first.Done()
	fmt.Println(first.Err())
	bad := gw.Subscribe("", func(gateway.Delivery) {})
	fmt.Println(bad.Err())
	// Output:
	// gateway: subscription replaced by a newer Subscribe on the same stream
	// gateway: Subscribe(""): wire: bad stream name: must be 1..256 bytes, got 0
}
