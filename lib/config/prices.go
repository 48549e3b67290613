package config

import "fmt"

// Price is what a model costs, in USD per million tokens of each kind
// ([prices."<model>"]): the model gateway turns its metered tokens into a
// run's cost with it, instead of trusting the cost the CLI reports.
type Price struct {
	Input      float64 `toml:"input"`
	Output     float64 `toml:"output"`
	CacheRead  float64 `toml:"cache_read"`
	CacheWrite float64 `toml:"cache_write"`
}

// validPrice reports what is wrong with p, "" when nothing.
func validPrice(p Price) string {
	for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
		if v < 0 {
			return "prices are USD per million tokens, never negative"
		}
	}
	return ""
}

// addPrice registers the price of model from file; it returns a message
// when another file priced the model differently.
func (s *backendSet) addPrice(model string, p Price, file string) string {
	if old, ok := s.prices[model]; ok && old != p {
		return fmt.Sprintf("model %q is priced differently in %s", model, s.priceFrom[model])
	}
	s.prices[model] = p
	s.priceFrom[model] = file
	return ""
}
