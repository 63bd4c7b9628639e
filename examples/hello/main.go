// Command hello is the smallest worker: it attaches to the homa-dpdk
// daemon's worker socket, sends one Homa RPC and prints the response.
//
//	hello -socket /run/homa-dpdk/demo/10.0.0.1.sock -to 10.0.0.2:99
//
// Against `homa-dpdk demo --workers /run/homa-dpdk/demo`, with the echo
// example serving port 99 on 10.0.0.2, it prints the request echoed.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
)

func main() {
	sock := flag.String("socket", "/run/homa-dpdk/demo/10.0.0.1.sock", "the daemon's worker control socket")
	to := flag.String("to", "10.0.0.2:99", "the server's address")
	flag.Parse()
	if err := hello(*sock, *to, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

// hello sends "hello" to the server at to, through the daemon at sock,
// and prints what came back.
func hello(sock, to string, out io.Writer) error {
	// #region call
	c, err := client.Dial(sock, client.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	dst, err := client.ParseAddr(to) // "10.0.0.2:99"
	if err != nil {
		return err
	}
	resp, err := c.Call(dst, []byte("hello"), 5*time.Second)
	if err != nil {
		return err
	}
	defer resp.Release()                                 // gives the receive pool's pages back
	fmt.Fprintf(out, "%s answered %q\n", dst, resp.Data) // resp.Data: a view of the pool, valid until Release
	// #endregion
	return nil
}
