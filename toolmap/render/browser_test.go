package render

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
)

// chromium returns the path of a Chromium to drive, from HABILIS_CHROMIUM
// or the PATH, or skips the test saying how to run it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HABILIS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium found: install it (Debian: apt-get install chromium) or set HABILIS_CHROMIUM to its path to open the map page in a browser")
	return ""
}

// browse opens page in a headless Chromium that touches no network and
// keeps its profile in a temporary directory.
func browse(t *testing.T, page string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // Chromium refuses to run as root with its sandbox
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1700, 1200),
	)
	// A bound on the whole session, so that a Chromium that hangs fails
	// the test instead of stalling the run; no assertion depends on it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.CSS("#overlay"))); err != nil {
		t.Fatalf("open %s in Chromium: %v", page, err)
	}
	return ctx
}

// spot is where on the page a target can be pointed at: the centre of
// the index-th element matching a selector, where that element is the one
// a pointer there reaches (not covered by another target).
type spot struct {
	X, Y  float64
	Index int
}

const findTarget = `(sel, want) => {
  const all = [...document.querySelectorAll(sel)];
  for (let i = 0; i < all.length; i++) {
    const e = all[i], r = e.getBoundingClientRect();
    const x = r.x + r.width / 2, y = r.y + r.height / 2;
    if ((want === "" || e.dataset.name === want) && document.elementFromPoint(x, y) === e) {
      return {X: x, Y: y, Index: i};
    }
  }
  return null;
}`

func find(t *testing.T, ctx context.Context, sel, name string) spot {
	t.Helper()
	js := "(" + findTarget + ")(" + jsString(sel) + ", " + jsString(name) + ")"
	p, err := chromedp.Run(ctx, chromedp.Evaluate[*spot](js))
	if err != nil {
		t.Fatalf("find %s %q: %v", sel, name, err)
	}
	if p == nil {
		t.Fatalf("no %s %q can be pointed at", sel, name)
	}
	return *p
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// highlight is what the page shows highlighted after a click.
type highlight struct {
	Links    []string // "a|b"
	Partners []string
	Selected []string
	Listed   []string // the collisions the panel lists
	Opacity  []string // each highlighted line's computed stroke opacity
	Dimmed   bool
	Panel    string
}

const readHighlight = `(() => ({
  Links: [...document.querySelectorAll('#links .link.on')].map(l => l.dataset.a + '|' + l.dataset.b),
  Partners: [...document.querySelectorAll('#tools .tool.partner')].map(t => t.dataset.name),
  Selected: [...document.querySelectorAll('#tools .tool.selected')].map(t => t.dataset.name),
  Listed: [...document.querySelectorAll('#detail li')].map(li => li.dataset.other),
  Opacity: [...document.querySelectorAll('#links .link.on')].map(l => getComputedStyle(l).strokeOpacity),
  Dimmed: document.getElementById('dim').classList.contains('on'),
  Panel: document.getElementById('detail').textContent,
}))()`

// TestPageInBrowser opens the HTML map in a real headless Chromium:
// hovering an example shows its text, clicking a tool highlights exactly
// its collisions and lists them with their culprit examples, and a second
// click clears them.
func TestPageInBrowser(t *testing.T) {
	m := testMap(t)
	page := filepath.Join(t.TempDir(), "map.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := HTML(f, m, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := browse(t, page)

	// Hover an example.
	p := find(t, ctx, "#examples .example", "")
	ex := m.Examples[p.Index]
	if err := chromedp.Do(ctx, chromedp.MouseEvent(chromedp.MouseMoved, p.X, p.Y)); err != nil {
		t.Fatal(err)
	}
	tip, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("#tip")))
	if err != nil {
		t.Fatal(err)
	}
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('tip').hidden`))
	if err != nil {
		t.Fatal(err)
	}
	if hidden || !strings.Contains(tip, ex.Text) || !strings.Contains(tip, ex.Tool) {
		t.Errorf("hovering example %q of %s shows tip %q (hidden %v), want its text and tool", ex.Text, ex.Tool, tip, hidden)
	}

	// Click tools.
	for _, c := range []struct {
		tool string
		want highlight
	}{
		{"get_weather", highlight{Links: []string{"get_weather|weather_forecast"}, Partners: []string{"weather_forecast"},
			Selected: []string{"get_weather"}, Listed: []string{"weather_forecast"}, Opacity: []string{"1"}, Dimmed: true}},
		{"web_search", highlight{Links: []string{"news_search|web_search", "create_event|web_search"},
			Partners: []string{"create_event", "news_search"}, Selected: []string{"web_search"},
			Listed: []string{"news_search", "create_event"}, Opacity: []string{"1", "1"}, Dimmed: true}},
	} {
		got := click(t, ctx, c.tool)
		panel := got.Panel
		got.Panel = ""
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("click %s: highlighted (-want +got):\n%s", c.tool, diff)
		}
		for _, l := range m.Links {
			if l.A != c.tool && l.B != c.tool {
				continue
			}
			for _, k := range l.Leaks {
				if !strings.Contains(panel, k.Example) {
					t.Errorf("click %s: the panel %q lacks the culprit %q", c.tool, panel, k.Example)
				}
			}
		}
		// Clicking the same tool again clears the highlight.
		if got := click(t, ctx, c.tool); len(got.Links)+len(got.Partners)+len(got.Selected)+len(got.Listed) > 0 || got.Dimmed {
			t.Errorf("second click on %s leaves %+v highlighted", c.tool, got)
		}
	}
}

// click clicks the named tool where a pointer reaches it and returns what
// the page then highlights, partners sorted.
func click(t *testing.T, ctx context.Context, tool string) highlight {
	t.Helper()
	p := find(t, ctx, "#tools .tool", tool)
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(p.X, p.Y)); err != nil {
		t.Fatalf("click %s: %v", tool, err)
	}
	h, err := chromedp.Run(ctx, chromedp.Evaluate[highlight](readHighlight))
	if err != nil {
		t.Fatalf("click %s: %v", tool, err)
	}
	slices.Sort(h.Partners)
	return h
}
