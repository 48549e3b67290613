package config

import "testing"

// TestTokenVarIsReadBack: the variable init writes a role's token to is
// one the role's identity is read from, for every row of the table.
func TestTokenVarIsReadBack(t *testing.T) {
	for _, s := range RoleSpecs() {
		env := NewEnv(map[string]string{s.TokenVar(): "t-0123456789", s.PassVar(): "p-0123456789"})
		b, err := botFromEnv(env, s.Name)
		if err != nil || b.Token != "t-0123456789" || b.Password != "p-0123456789" || b.Fallback {
			t.Errorf("%s: %s/%s read back as %+v, %v", s.Name, s.TokenVar(), s.PassVar(), b, err)
		}
	}
}
