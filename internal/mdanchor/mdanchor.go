// Package mdanchor gives the anchors GitHub makes for Markdown headings,
// for the tests that check links and citations into the pages (the docs
// test, internal/layout's citations test).
package mdanchor

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

var linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// Slugs gives GitHub's anchors for headings (their text, without the
// leading #s): a link's text kept, lower case, every character but
// letters, digits, spaces, hyphens and underscores dropped, spaces to
// hyphens, and -1, -2, ... after a repeated one.
func Slugs(heads []string) []string {
	seen := map[string]int{}
	var out []string
	for _, h := range heads {
		h = linkText.ReplaceAllString(h, "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '_' || r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		s := b.String()
		if n := seen[s]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", s, n))
		} else {
			out = append(out, s)
		}
		seen[s]++
	}
	return out
}
