# Targets stay thin: the work is in scripts/, where it can be read and run on its own.
.PHONY: run check test bench lint clean soak fleet

run: ## build everything and serve the demo page on http://127.0.0.1:8080
	./scripts/run.sh

check: ## the inner loop, under a minute: gofmt, vet (native and js/wasm), go test -short of every package; no browser
	./scripts/check.sh

test: ## every test: lint, go test -race, wasm tests (Node, Chromium), Playwright, chaos smoke, short fleet
	./scripts/test.sh

lint: ## gofmt, go mod tidy, vet + staticcheck (native and js/wasm, with and without -tags lifeline_faults), the import rules, govulncheck (offline)
	./scripts/lint.sh

bench: ## benchmarks (long; not part of make test)
	./scripts/bench.sh

soak: ## the chaos soak: 200 clients, 3 Chromium pages, 10 minutes of faults (not part of make test)
	./scripts/soak.sh

fleet: ## a one-machine fleet: 3-node NATS JetStream cluster, three Hosts, nginx; prints the URL
	./scripts/fleet.sh

clean:
	rm -rf bin bench/.bin e2e/node_modules e2e/test-results e2e/playwright-report
