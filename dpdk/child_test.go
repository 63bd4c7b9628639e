package dpdk_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
)

// runChild is the body of a re-executed test binary; it returns the exit
// code.
func runChild(role string) int {
	switch role {
	case "init":
		args := strings.Split(os.Getenv("HOMA_CHILD_ARGS"), "\x1f")
		if _, err := dpdk.Init(args); err != nil {
			fmt.Println(err)
			return 3
		}
		fmt.Println("initialised")
		return 0
	case "memif-sender":
		if err := memifSender(); err != nil {
			fmt.Fprintln(os.Stderr, "memif sender:", err)
			return 4
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown child role", role)
	return 2
}
