package hub

// MaxReplay is how many events a stream keeps for late subscribers.
const MaxReplay = maxReplay

// Sync returns once c has acted on every message handled before.
func Sync(c *Conn) {
	ack := make(chan struct{})
	c.enqueue(func() bool { close(ack); return true })
	<-ack
}
