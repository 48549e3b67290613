package agent

import (
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/claude"
)

// BudgetNote is the comment that tells an issue or pull request that a
// spent model budget holds its work: what waits, why (the budget error,
// which names the budget), and how it goes on.
func BudgetNote(what, why string) string {
	why = strings.TrimPrefix(why, claude.ErrBudgetExhausted.Error()+": ")
	return fmt.Sprintf("%s waits: %s. It resumes by itself when the day rolls over (for a day budget) "+
		"or when `[budget]` in the project file is raised.", what, why)
}
