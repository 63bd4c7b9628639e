package perf

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// config is a scenario's configuration as the flag helper binds it.
type config struct {
	Names  []string
	Loads  []float64
	Ranks  []int
	Period time.Duration
	Count  int
}

func defaultConfig() config {
	return config{Names: []string{"W1", "W2"}, Loads: []float64{0.5, 0.8}, Ranks: []int{2, 4}, Period: 10 * time.Second, Count: 100}
}

func smokeConfig() config {
	return config{Names: []string{"W3"}, Loads: []float64{0.5}, Ranks: []int{2}, Period: time.Second, Count: 5}
}

func bind(t *testing.T, veth bool, args ...string) (*Flags, *config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	cfg := defaultConfig()
	f := BindFlags(fs, "", veth)
	f.Names(&cfg.Names, "workloads", "workloads", strings.ToUpper)
	f.Loads(&cfg.Loads, "loads", "loads")
	f.Ints(&cfg.Ranks, "ranks", "ranks")
	f.Seconds(&cfg.Period, "seconds", "seconds")
	fs.IntVar(&cfg.Count, "count", cfg.Count, "count")
	if err := fs.Parse(args); err != nil {
		return f, &cfg, err
	}
	return f, &cfg, SmokeOver(f, &cfg, smokeConfig)
}

// The flags bind to the configuration's fields, each kind parsed.
func TestFlags_bind(t *testing.T) {
	f, cfg, err := bind(t, true, "--workloads", "w4, w5", "--loads", "50,0.8,90%", "--ranks", "2,8", "--seconds", "0.5",
		"--out", "dir", "--no-veth")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Names, []string{"W4", "W5"}) || !slices.Equal(cfg.Loads, []float64{0.5, 0.8, 0.9}) ||
		!slices.Equal(cfg.Ranks, []int{2, 8}) || cfg.Period != 500*time.Millisecond || cfg.Count != 100 {
		t.Errorf("%+v", cfg)
	}
	if f.Smoke || f.Out != "dir" || !f.NoVeth {
		t.Errorf("flags %+v", f)
	}
	if _, _, err := bind(t, false, "--no-veth"); err == nil {
		t.Error("--no-veth bound where the scenario has no veth pair")
	}
}

// Values the flags refuse, each with why.
func TestFlags_validate(t *testing.T) {
	for _, args := range [][]string{{"--loads", "0"}, {"--loads", "100"}, {"--loads", "150%"}, {"--loads", "x"}, {"--ranks", "2,x"},
		{"--seconds", "-1"}, {"--workloads", "W1,"}} {
		if _, _, err := bind(t, false, args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	for in, want := range map[string]float64{"80": 0.8, "80%": 0.8, "0.8": 0.8, "1%": 0.01, "99.5": 0.995} {
		if got, err := ParseLoad(in); err != nil || got != want {
			t.Errorf("ParseLoad(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

// --smoke makes the configuration the smoke size, and the flags given on
// the command line still win over it, whatever their order.
func TestSmokeOver_givenFlagsWin(t *testing.T) {
	_, cfg, err := bind(t, false, "--smoke")
	if err != nil || !slices.Equal(cfg.Names, []string{"W3"}) || cfg.Count != 5 || cfg.Period != time.Second {
		t.Errorf("smoke: %+v %v", cfg, err)
	}
	_, cfg, err = bind(t, false, "--loads", "90", "--smoke", "--count", "7")
	want := smokeConfig()
	want.Loads, want.Count = []float64{0.9}, 7
	if err != nil || !slices.Equal(cfg.Loads, want.Loads) || cfg.Count != 7 || !slices.Equal(cfg.Names, want.Names) || cfg.Period != want.Period {
		t.Errorf("smoke with flags: %+v %v", cfg, err)
	}
	_, cfg, _ = bind(t, false, "--count", "7")
	if d := defaultConfig(); !slices.Equal(cfg.Names, d.Names) || cfg.Count != 7 {
		t.Errorf("no smoke: %+v", cfg)
	}
}

// The results directory is --out, made; the options carry the flags.
func TestFlags_options(t *testing.T) {
	dir := t.TempDir() + "/results"
	f, _, err := bind(t, true, "--out", dir, "--smoke", "--no-veth")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	o, err := f.Options(&b)
	if err != nil {
		t.Skip(err) // a machine of one CPU
	}
	if o.Dir != dir || !o.Smoke || !o.NoVeth || o.Self == "" || o.Out != &b {
		t.Errorf("%+v", o)
	}
}
