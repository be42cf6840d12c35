package wire_test

import (
	"testing"

	"github.com/lifeline-go/lifeline/internal/test/fieldtest"
	"github.com/lifeline-go/lifeline/internal/wire"
)

func TestTheBootstrapListsItsFieldsByTheirTags(t *testing.T) {
	fieldtest.Check(t, &wire.Bootstrap{})
}
