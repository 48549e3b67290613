package config

import (
	"fmt"
	"time"
)

// Duration is a TOML duration: either a string Go's time.ParseDuration
// accepts ("5m", "6h") or an integer number of seconds, as the reference
// wrote intervals.
type Duration time.Duration

// UnmarshalTOML implements toml.Unmarshaler.
func (d *Duration) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return fmt.Errorf("negative duration %d", x)
		}
		*d = Duration(time.Duration(x) * time.Second)
	case string:
		p, err := time.ParseDuration(x)
		if err != nil {
			return fmt.Errorf("bad duration %q (want e.g. \"300s\", \"6h\", or seconds as an integer)", x)
		}
		if p < 0 {
			return fmt.Errorf("negative duration %q", x)
		}
		*d = Duration(p)
	default:
		return fmt.Errorf("bad duration %v (want e.g. \"300s\", \"6h\", or seconds as an integer)", v)
	}
	return nil
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
