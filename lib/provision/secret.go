package provision

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
)

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// randomString returns n characters drawn uniformly from alnum.
func randomString(r io.Reader, n int) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, n)
	max := big.NewInt(int64(len(alnum)))
	for i := range b {
		k, err := rand.Int(r, max)
		if err != nil {
			return "", fmt.Errorf("random: %w", err)
		}
		b[i] = alnum[k.Int64()]
	}
	return string(b), nil
}

// randomHex returns 2n hex digits from n random bytes.
func randomHex(r io.Reader, n int) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return hex.EncodeToString(b), nil
}
