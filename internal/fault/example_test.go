//go:build !js

package fault_test

import (
	"fmt"

	"github.com/lifeline-go/lifeline/internal/fault"
)

func ExampleParse() {
	f, _ := fault.Parse("flap=1500")
	fmt.Println(f.Mode, f.After)
	// Output:
	// flap 1.5s
}
