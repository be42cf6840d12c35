package wire_test

import (
	"testing"

	"github.com/lifeline-go/lifeline/gateway/wire"
	"github.com/lifeline-go/lifeline/internal/test/fieldtest"
)

func TestTheBootstrapListsItsFieldsByTheirTags(t *testing.T) {
	fieldtest.Check(t, &wire.Bootstrap{})
}
