// Command echo is a worker pair over the homa-dpdk daemon's shared-memory
// interface: the server binds a Homa port and answers every request with
// its own bytes; the client sends requests, checks each response and
// prints round-trip times.
//
//	echo server -socket /run/homa-dpdk/demo/10.0.0.2.sock -port 99
//	echo client -socket /run/homa-dpdk/demo/10.0.0.1.sock -to 10.0.0.2:99 -n 1000 -size 100
//
// Neither needs root, cgo or DPDK: only the daemon's socket.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/client"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "server" && os.Args[1] != "client") {
		fmt.Fprintln(os.Stderr, "usage: echo server|client [flags] (-h for the flags)")
		os.Exit(2)
	}
	role := os.Args[1]
	fs := flag.NewFlagSet(role, flag.ExitOnError)
	sock := fs.String("socket", "/run/homa-dpdk/workers.sock", "the daemon's worker control socket")
	port := fs.Uint("port", 99, "server: the Homa port to bind")
	to := fs.String("to", "10.0.0.2:99", "client: the server's address")
	n := fs.Int("n", 1000, "client: RPCs to send")
	size := fs.Int("size", 100, "client: request bytes")
	fs.Parse(os.Args[2:])

	c, err := client.Dial(*sock, client.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	defer c.Close()
	if role == "server" {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
		err = serve(c, uint16(*port), stop)
	} else {
		err = call(c, *to, *n, *size)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

// serve answers requests until stop receives (SIGINT or SIGTERM).
func serve(c *client.Client, port uint16, stop <-chan os.Signal) error {
	if err := c.Bind(port); err != nil {
		return err
	}
	fmt.Printf("echo server on port %d\n", port)
	served := 0
	for {
		select {
		case <-stop:
			fmt.Printf("echo server: %d requests answered\n", served)
			return nil
		default:
		}
		m, err := c.Receive(200 * time.Millisecond)
		if errors.Is(err, client.ErrWaitTimeout) {
			continue
		}
		if err != nil {
			return err
		}
		err = c.Reply(m, m.Data)
		m.Release()
		if err != nil {
			return err
		}
		served++
	}
}

// call sends n requests of size bytes, one at a time, and prints RTTs.
func call(c *client.Client, to string, n, size int) error {
	dst, err := client.ParseAddr(to)
	if err != nil {
		return err
	}
	req := make([]byte, size)
	for i := range req {
		req[i] = byte(i)
	}
	rtts := make([]time.Duration, 0, n)
	for i := range n {
		req[0] = byte(i)
		t0 := time.Now()
		resp, err := c.Call(dst, req, 5*time.Second)
		if err != nil {
			return fmt.Errorf("RPC %d: %w", i, err)
		}
		rtts = append(rtts, time.Since(t0))
		same := bytes.Equal(resp.Data, req)
		resp.Release()
		if !same {
			return fmt.Errorf("RPC %d: the response differs from the request", i)
		}
	}
	slices.Sort(rtts)
	q := func(p float64) time.Duration { return rtts[int(p*float64(len(rtts)-1))] }
	fmt.Printf("%d RPCs of %d bytes to %s, all echoed byte for byte: RTT P50 %v, P99 %v, max %v\n",
		n, size, dst, q(0.5), q(0.99), rtts[len(rtts)-1])
	return nil
}
