package node

import (
	"context"
	"strings"
	"testing"
)

func TestStartOrder(t *testing.T) {
	noop := func(*Node, context.Context) error { return nil }
	c := func(name string, deps ...string) component { return component{name: name, deps: deps, start: noop} }
	cases := []struct {
		name    string
		in      []component
		want    string // names in start order
		wantErr string
	}{
		{"listed order when free", []component{c("a"), c("b"), c("c")}, "a b c", ""},
		{"deps first", []component{c("http", "store"), c("store", "disk"), c("disk")}, "disk store http", ""},
		{"unknown dep", []component{c("a", "nope")}, "", `"a" needs "nope"`},
		{"cycle", []component{c("a", "b"), c("b", "a")}, "", "cycle: a → b → a"},
		{"twice", []component{c("a"), c("a")}, "", "listed twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := startOrder(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			var names []string
			for _, c := range got {
				names = append(names, c.name)
			}
			if strings.Join(names, " ") != tc.want {
				t.Fatalf("order %v, want %s", names, tc.want)
			}
		})
	}
}

// TestNodeComponents checks the node's own list: it sorts, and every component starts after
// what it names.
func TestNodeComponents(t *testing.T) {
	order, err := startOrder(components)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, c := range order {
		at[c.name] = i
	}
	for _, c := range order {
		for _, d := range c.deps {
			if at[d] >= at[c.name] {
				t.Errorf("%s starts before %s, which it needs", c.name, d)
			}
		}
	}
	if len(Components()) != len(components) {
		t.Errorf("Components lists %d of %d", len(Components()), len(components))
	}
}
