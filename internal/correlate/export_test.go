package correlate

// MaxSessionSpans is maxSessionSpans for the external tests (the restart
// property names the cap a second instance counts anew).
const MaxSessionSpans = maxSessionSpans
