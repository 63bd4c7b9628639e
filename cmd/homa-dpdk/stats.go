package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// statsCmd prints a running daemon's counters, read from its metrics
// endpoint.
func statsCmd() *cobra.Command {
	var addr, filter string
	var all bool
	c := &cobra.Command{
		Use:   "stats [--metrics host:port] [--filter text]",
		Short: "Print a running daemon's counters (from its /metrics endpoint)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printStats(cmd.OutOrStdout(), "http://"+addr+"/metrics", filter, all)
		},
	}
	c.Flags().StringVar(&addr, "metrics", "127.0.0.1:9464", "the daemon's metrics.address")
	c.Flags().StringVar(&filter, "filter", "", "only lines containing this text")
	c.Flags().BoolVar(&all, "all", false, "include counters that are zero")
	return c
}

func printStats(w io.Writer, url, filter string, all bool) error {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return fmt.Errorf("stats: %w (is the daemon running with metrics.address set?)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("stats: %s answered %s", url, resp.Status)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "homa_") || (filter != "" && !strings.Contains(l, filter)) {
			continue
		}
		if !all && strings.HasSuffix(l, " 0") {
			continue
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("stats: reading %s: %w", url, err)
	}
	sort.Strings(lines)
	for _, l := range lines {
		i := strings.LastIndexByte(l, ' ')
		fmt.Fprintf(w, "%-100s %s\n", l[:i], l[i+1:])
	}
	return nil
}
