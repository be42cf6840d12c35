module github.com/lifeline-go/lifeline/bench

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	github.com/lifeline-go/lifeline v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.49.0
)

require (
	github.com/gabriel-vasile/mimetype v1.4.16 // indirect
	github.com/go-playground/locales v0.14.2 // indirect
	github.com/go-playground/universal-translator v0.18.2 // indirect
	github.com/go-playground/validator/v10 v10.30.6 // indirect
	github.com/leodido/go-urn v1.5.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)

replace github.com/lifeline-go/lifeline => ../
