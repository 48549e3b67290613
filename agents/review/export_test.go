package review

// CIRecheck is ciRecheck, for the black-box tests.
const CIRecheck = ciRecheck
