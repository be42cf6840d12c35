// Package testbed is what Lifeline's benchmark harness (bench/harness), chaos soak (e2e/soak)
// and fleet test (e2e/fleet) share to run the processes they test: starting and stopping
// children so that none outlives the run, free ports, bounded waits for a server to come up,
// a client of bin/host's health and fault panel, and a process's output as lines a test waits
// on ([Lines]). The line format of bin/swarm is internal/swarmline's (it ships with it).
//
// A [Bed] is every process one run started. Each runs in a process group of its own, with
// its stdin on a pipe this program holds, its stdout and stderr in log files (stdout also
// handed to a line callback when asked). It is stopped as a group: SIGTERM, then SIGKILL
// after a bound, until nobody is left in it (the group may outlive its leader: a Host hands
// its socket to a successor in its group). The kernel also sends every child a death signal when this program dies without stopping it
// (SIGKILL of the harness, a crash), so not even kill -9 of a run leaves Hosts or NATS nodes
// behind. The death signal reaches the child only, not its own children: a child that has
// some (nginx's master, a browser's driver) is given SIGTERM, on which it ends them.
//
// Every wait here has a hard bound, given by the caller.
//
// It builds natively only; the process parts are Linux's (process groups, death signals,
// waitid).
package testbed
