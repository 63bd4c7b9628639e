package shm

// PagePool is the engine's account of one region's receive pool: each
// page is free, filling (a message is being reassembled into it) or held
// (delivered to the worker, until it sends ReturnPages). A message takes
// a run of consecutive pages, so the worker sees it as one byte range.
// It is owned by the engine's loop; nothing in it is shared memory, so a
// worker cannot change what the engine believes it holds.
type PagePool struct {
	state []pageState
	free  int
	held  int
	hint  int // where the next search starts (next fit)
}

type pageState uint8

const (
	pageFree pageState = iota
	pageFilling
	pageHeld
)

// NewPagePool returns a pool of pages pages, all free.
func NewPagePool(pages int) *PagePool {
	return &PagePool{state: make([]pageState, pages), free: pages}
}

// PagesFor is the number of pages a message of n bytes takes.
func PagesFor(n int) int { return (n + PageSize - 1) / PageSize }

// Pages is the pool's size.
func (p *PagePool) Pages() int { return len(p.state) }

// Free is the number of free pages.
func (p *PagePool) Free() int { return p.free }

// Held is the number of pages the worker holds.
func (p *PagePool) Held() int { return p.held }

// Alloc finds n consecutive free pages, marks them filling and returns the
// first; ok is false when no run of n free pages exists.
func (p *PagePool) Alloc(n int) (page int, ok bool) {
	total := len(p.state)
	if n <= 0 || n > p.free {
		return 0, false
	}
	start := p.hint
	if start+n > total {
		start = 0
	}
	for tried := 0; tried < total; {
		if start+n > total { // a run cannot wrap: restart at 0
			tried += total - start
			start = 0
			continue
		}
		run := 0
		for run < n && p.state[start+run] == pageFree {
			run++
		}
		if run == n {
			for i := range n {
				p.state[start+i] = pageFilling
			}
			p.free -= n
			p.hint = start + n
			return start, true
		}
		tried += run + 1
		start += run + 1
	}
	return 0, false
}

// Deliver marks a filled run as held by the worker.
func (p *PagePool) Deliver(page, n int) {
	for i := page; i < page+n; i++ {
		p.state[i] = pageHeld
	}
	p.held += n
}

// Release frees a run that was filling (its message ended undelivered).
func (p *PagePool) Release(page, n int) {
	for i := page; i < page+n; i++ {
		p.state[i] = pageFree
	}
	p.free += n
}

// Return frees pages the worker gives back. Unless every page of the
// range is held by the worker, it changes nothing and returns false.
func (p *PagePool) Return(page, n uint32) bool {
	if uint64(page)+uint64(n) > uint64(len(p.state)) || n == 0 {
		return false
	}
	for i := page; i < page+n; i++ {
		if p.state[i] != pageHeld {
			return false
		}
	}
	for i := page; i < page+n; i++ {
		p.state[i] = pageFree
	}
	p.held -= int(n)
	p.free += int(n)
	return true
}
