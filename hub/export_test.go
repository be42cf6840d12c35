package hub

// MaxReplay is how many events a stream keeps for late subscribers.
const MaxReplay = maxReplay
