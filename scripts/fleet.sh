#!/usr/bin/env bash
# make fleet: a one-machine Lifeline fleet. A 3-node NATS cluster with JetStream (e2e/fleet/natsnode,
# the embedded nats-server), three Hosts sharing their stream logs in it, nginx in front as the
# WebSocket load balancer (e2e/fleet/nginx.conf.tmpl). Prints the URL; Ctrl-C stops everything.
# Ports: PORT (nginx, 8080), HOST_BASE (Hosts, 8081..8083), NATS_BASE (4222..4224), 6222..6224.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-8080}
HOST_BASE=${HOST_BASE:-8081}
NATS_BASE=${NATS_BASE:-4222}
ROUTE_BASE=${ROUTE_BASE:-6222}

./scripts/setup.sh fleet
./scripts/build.sh
go build -o bin/natsnode ./e2e/fleet/natsnode

run=$(mktemp -d /tmp/lifeline-fleet.XXXXXX)
pids=()
cleanup() {
	trap - EXIT INT TERM
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	echo "fleet stopped; logs were in $run"
}
trap cleanup EXIT INT TERM

routes=""
for i in 1 2 3; do routes+="nats://127.0.0.1:$((ROUTE_BASE + i - 1)),"; done
nats=""
for i in 1 2 3; do
	mkdir -p "$run/nats$i"
	./bin/natsnode -name "n$i" -addr "127.0.0.1:$((NATS_BASE + i - 1))" -cluster "127.0.0.1:$((ROUTE_BASE + i - 1))" \
		-routes "${routes%,}" -dir "$run/nats$i" 2>"$run/nats$i.log" &
	pids+=($!)
	nats+="nats://127.0.0.1:$((NATS_BASE + i - 1)),"
done
nats=${nats%,}
for i in 1 2 3; do
	# -drain-on-stop: behind nginx the other Hosts take a stopping Host's pages.
	./bin/host -id "h$i" -addr "127.0.0.1:$((HOST_BASE + i - 1))" -web web -faults -drain-on-stop \
		-nats "$nats" -nats-replicas 3 2>"$run/host$i.log" &
	pids+=($!)
done
for i in 1 2 3; do
	for _ in $(seq 100); do
		curl -fsS "http://127.0.0.1:$((HOST_BASE + i - 1))/_lifeline/health" >/dev/null 2>&1 && break
		sleep 0.2
	done
done

mkdir -p "$run/nginx"
sed -e "s#{{DIR}}#$run/nginx#g" -e "s#{{PORT}}#$PORT#g" \
	-e "s#{{H1}}#127.0.0.1:$HOST_BASE#g" -e "s#{{H2}}#127.0.0.1:$((HOST_BASE + 1))#g" -e "s#{{H3}}#127.0.0.1:$((HOST_BASE + 2))#g" \
	e2e/fleet/nginx.conf.tmpl >"$run/nginx/nginx.conf"
nginx -p "$run/nginx" -c "$run/nginx/nginx.conf" -e "$run/nginx/error.log" &
pids+=($!)

echo
echo "Lifeline fleet: open http://127.0.0.1:$PORT/  (the page says which Host it is on)"
echo "Hosts h1..h3 on 127.0.0.1:$HOST_BASE..$((HOST_BASE + 2)), NATS on $nats; logs in $run"
echo "Rolling restart of h2: curl -d drain= http://127.0.0.1:$((HOST_BASE + 1))/_lifeline/faults"
echo "Pin pages to h3:       curl -d drain=/h3/_lifeline/events http://127.0.0.1:$((HOST_BASE))/_lifeline/faults"
echo "Ctrl-C stops the fleet."
wait
