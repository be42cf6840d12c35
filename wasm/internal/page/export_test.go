package page

import "github.com/lifeline-go/lifeline/internal/strictjson"

// NewOptions is a zero lifelineOptions document, for the check of its fields.
func NewOptions() strictjson.Object { return new(options) }
