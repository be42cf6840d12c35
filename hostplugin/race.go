//go:build race && !js

package hostplugin

// raceBuild: the race detector sees the happens-before of a write(2) to the read(2) of its
// bytes (package syscall tells it), not of a writev. Under -race a session's batch is copied
// and written (socket.writeMessages), so that a test that acts on what its page read is not
// reported racing with what the Host did before the write.
const raceBuild = true
