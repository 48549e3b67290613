package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// A session's uid must be one workspace's on the whole host, not only
// under one data dir: Reap ends every process of the uid, so two daemons
// (or two test processes) that handed out the same uid would kill each
// other's sessions. Each uid in use is therefore claimed with an exclusive
// flock on <ClaimDir>/uid-<n>.lock, held until its workspace is removed or
// the process ends (the kernel drops the lock with it, so a crash frees
// its uids). A sandbox allocating a uid skips the claimed ones.

// DefaultClaimDir holds the uid claims of every sandbox on the host.
const DefaultClaimDir = "/run/disinto/session-uids"

// processClaims are the uid claims this process holds, by uid, with the
// root of the sandbox that holds each: another sandbox of the same root
// (a daemon rebuilt in the same process) shares them, one of another root
// does not.
var processClaims = struct {
	sync.Mutex
	byUID map[int]heldClaim
}{byUID: map[int]heldClaim{}}

type heldClaim struct {
	root string
	f    *os.File
}

// claim takes uid for the sandbox; ok is false when another process, or a
// sandbox of another root in this one, holds it.
func (s *Sandbox) claim(uid int) (ok bool, err error) {
	processClaims.Lock()
	defer processClaims.Unlock()
	if h, held := processClaims.byUID[uid]; held {
		return h.root == s.o.Root, nil
	}
	if err := os.MkdirAll(s.o.ClaimDir, 0o700); err != nil {
		return false, fmt.Errorf("sandbox: uid claims: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(s.o.ClaimDir, "uid-"+strconv.Itoa(uid)+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false, fmt.Errorf("sandbox: uid claims: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return false, fmt.Errorf("sandbox: claim uid %d: %w", uid, err)
	}
	processClaims.byUID[uid] = heldClaim{root: s.o.Root, f: f}
	return true, nil
}

// release gives up the claim on uid, if this sandbox's root holds it.
func (s *Sandbox) release(uid int) {
	processClaims.Lock()
	defer processClaims.Unlock()
	if h, held := processClaims.byUID[uid]; held && h.root == s.o.Root {
		_ = h.f.Close()
		delete(processClaims.byUID, uid)
	}
}
