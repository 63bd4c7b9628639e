package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// statsCmd prints a running daemon's metrics, read from its metrics
// endpoint: once, or every interval with each counter's rate (--watch),
// or one of its probes (--probe).
func statsCmd() *cobra.Command {
	var addr, filter, probe string
	var all bool
	var watch time.Duration
	var count int
	c := &cobra.Command{
		Use:   "stats [--metrics host:port] [--filter text] [--watch 1s] [--probe healthz|readyz]",
		Short: "Print a running daemon's metrics (from its /metrics endpoint), with rates (--watch)",
		Long: `stats reads the daemon's /metrics (metrics.address) and prints its homa_* samples
that are not zero (--all: every one; histogram buckets only with --all). With --watch
INTERVAL it prints them again every INTERVAL with each counter's rate per second over
the interval, until interrupted (or --count times). With --probe healthz or readyz it
asks that probe instead, prints its answer and exits 1 when the daemon is unhealthy
or not ready (the container's HEALTHCHECK and the Kubernetes probes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base := "http://" + addr
			out := cmd.OutOrStdout()
			if probe != "" {
				return askProbe(out, base, probe)
			}
			if watch <= 0 {
				return printStats(out, base+"/metrics", filter, all)
			}
			return watchStats(out, base+"/metrics", filter, all, watch, count)
		},
	}
	c.Flags().StringVar(&addr, "metrics", "127.0.0.1:9464", "the daemon's metrics.address")
	c.Flags().StringVar(&filter, "filter", "", "only samples whose line contains this text")
	c.Flags().BoolVar(&all, "all", false, "include samples that are zero, and histogram buckets")
	c.Flags().DurationVar(&watch, "watch", 0, "print again every interval, with rates per second (e.g. 1s)")
	c.Flags().IntVar(&count, "count", 0, "with --watch: stop after this many intervals (0: until interrupted)")
	c.Flags().StringVar(&probe, "probe", "", "ask a probe instead: healthz or readyz")
	return c
}

// sample is one line of the exposition format: its name and labels, and
// its value.
type sample struct {
	key     string
	value   float64
	counter bool // a counter (or a histogram's _count and _sum): a rate means something
}

// scrape reads the homa_ samples of url that pass filter (and all).
func scrape(url, filter string, all bool) ([]sample, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return nil, fmt.Errorf("stats: %w (is the daemon running with metrics.address set?)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("stats: %s answered %s", url, resp.Status)
	}
	types := map[string]string{}
	var out []sample
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
			continue
		}
		if !strings.HasPrefix(l, "homa_") || (filter != "" && !strings.Contains(l, filter)) {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		name := l[:i]
		if j := strings.IndexByte(name, '{'); j >= 0 {
			name = name[:j]
		}
		if !all && strings.HasSuffix(name, "_bucket") {
			continue
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			continue
		}
		if !all && v == 0 {
			continue
		}
		base := strings.TrimSuffix(strings.TrimSuffix(name, "_count"), "_sum")
		counter := types[name] == "counter" || types[base] == "histogram" && base != name
		out = append(out, sample{key: l[:i], value: v, counter: counter})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("stats: reading %s: %w", url, err)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].key < out[b].key })
	return out, nil
}

func printStats(w io.Writer, url, filter string, all bool) error {
	samples, err := scrape(url, filter, all)
	if err != nil {
		return err
	}
	for _, s := range samples {
		fmt.Fprintf(w, "%-100s %s\n", s.key, strconv.FormatFloat(s.value, 'g', -1, 64))
	}
	return nil
}

// watchStats prints the samples every interval, each counter with its
// rate per second since the previous scrape.
func watchStats(w io.Writer, url, filter string, all bool, every time.Duration, count int) error {
	prev, err := scrape(url, filter, true)
	if err != nil {
		return err
	}
	last := time.Now()
	for n := 0; count == 0 || n < count; n++ {
		time.Sleep(every)
		cur, err := scrape(url, filter, true)
		if err != nil {
			return err
		}
		now := time.Now()
		dt := now.Sub(last).Seconds()
		before := map[string]float64{}
		for _, s := range prev {
			before[s.key] = s.value
		}
		fmt.Fprintf(w, "-- %s, rates over %.1f s\n", now.Format(time.TimeOnly), dt)
		for _, s := range cur {
			if strings.Contains(s.key, "_bucket") && !all {
				continue
			}
			rate := (s.value - before[s.key]) / dt
			if !all && s.value == 0 {
				continue
			}
			if s.counter {
				fmt.Fprintf(w, "%-100s %14s %12.1f/s\n", s.key, strconv.FormatFloat(s.value, 'g', -1, 64), rate)
			} else {
				fmt.Fprintf(w, "%-100s %14s\n", s.key, strconv.FormatFloat(s.value, 'g', -1, 64))
			}
		}
		prev, last = cur, now
	}
	return nil
}

// askProbe prints the answer of /healthz or /readyz and fails unless it
// is 200.
func askProbe(w io.Writer, base, probe string) error {
	if probe != "healthz" && probe != "readyz" {
		return fmt.Errorf("--probe %q: want healthz or readyz", probe)
	}
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(base + "/" + probe)
	if err != nil {
		return fmt.Errorf("stats: %w (is the daemon running with metrics.address set?)", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", probe, strings.TrimSpace(string(body)))
	}
	fmt.Fprint(w, string(body))
	return nil
}
