package main

import (
	"net"
	"sync"
	"testing"
)

// etcdProxy passes TCP connections on to an etcd member, until it is frozen:
// then it holds every byte (both ways) instead of passing it on, as a
// network that stopped delivering would, and cut drops the held bytes and
// every connection. It lets a test stop one Tether server's commits at the
// instant it chooses while the server itself runs on.
type etcdProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	frozen chan struct{} // closed when thawed; nil while not frozen
	conns  []net.Conn
	cut    chan struct{}
	once   sync.Once
}

// startEtcdProxy listens on a free loopback port in front of target
// (host:port); it is cut when the test ends.
func startEtcdProxy(t *testing.T, target string) *etcdProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &etcdProxy{ln: ln, target: target, cut: make(chan struct{})}
	go p.accept()
	t.Cleanup(p.Cut)
	return p
}

// URL is the proxy's client URL.
func (p *etcdProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *etcdProxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

// pipe copies from src to dst, holding each chunk while the proxy is frozen
// and dropping it when the proxy is cut.
func (p *etcdProxy) pipe(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			thawed := p.frozen
			p.mu.Unlock()
			if thawed != nil {
				select {
				case <-thawed:
				case <-p.cut:
					return
				}
			}
			select {
			case <-p.cut:
				return
			default:
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			src.Close()
			dst.Close()
			return
		}
	}
}

// Freeze holds every byte from now on.
func (p *etcdProxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen == nil {
		p.frozen = make(chan struct{})
	}
}

// Cut drops what is held and closes every connection and the listener.
func (p *etcdProxy) Cut() {
	p.once.Do(func() {
		close(p.cut)
		p.ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
}
