package load

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie is dead (it only waits for its parent's wait).
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func waitGone(t *testing.T, pids []int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("burner %d still alive %s later", pid, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestStartStop(t *testing.T) {
	l, err := Start(context.Background(), Config{Workers: 2, ExecPerSecond: 50, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	pids := l.PIDs()
	if len(pids) != 2 {
		t.Fatalf("pids %v", pids)
	}
	time.Sleep(700 * time.Millisecond)
	st := l.Stop()
	if st.CPU <= 0 || st.Reason != "stopped" || st.Workers != 2 {
		t.Errorf("stats: %+v", st)
	}
	if st.Execs == 0 {
		t.Errorf("no exec churn: %+v", st)
	}
	waitGone(t, pids, time.Second)
	if again := l.Stop(); again.Reason != "stopped" {
		t.Errorf("second Stop: %+v", again)
	}
}

func TestBoundedByMaxAndContext(t *testing.T) {
	l, err := Start(context.Background(), Config{Workers: 1, Max: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("load outlived Config.Max")
	}
	if st := l.Stop(); st.Reason != "max reached" {
		t.Errorf("stats: %+v", st)
	}
	waitGone(t, l.PIDs(), time.Second)

	ctx, cancel := context.WithCancel(context.Background())
	l, err = Start(ctx, Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("load outlived its context")
	}
	if st := l.Stop(); st.Reason != "context done" {
		t.Errorf("stats: %+v", st)
	}
}

// TestHelperOwner is run as a child process by TestDiesWithOwner.
func TestHelperOwner(t *testing.T) {
	if os.Getenv("LOAD_TEST_HELPER") != "1" {
		t.Skip("helper")
	}
	l, err := Start(context.Background(), Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range l.PIDs() {
		fmt.Printf("burner %d\n", pid)
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
}

// TestDiesWithOwner: a test process killed with SIGKILL (go test's timeout
// does that) takes its burners with it.
func TestDiesWithOwner(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOwner$", "-test.v")
	cmd.Env = append(os.Environ(), "LOAD_TEST_HELPER=1", OwnerEnv+"=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "burner "); ok {
			n, _ := strconv.Atoi(p)
			pids = append(pids, n)
		}
		if line == "ready" {
			break
		}
	}
	if len(pids) != 2 {
		_ = cmd.Process.Kill()
		t.Fatalf("helper printed %v", pids)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("burner %d not running", pid)
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	waitGone(t, pids, 2*time.Second)
}

func TestFromEnv(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "1": true, "cpu": true, "on": true} {
		t.Setenv(Env, v)
		t.Setenv(OwnerEnv, "")
		_, on, err := FromEnv()
		if err != nil || on != want {
			t.Errorf("%s=%q: on %v err %v", Env, v, on, err)
		}
	}
	t.Setenv(Env, "1")
	t.Setenv(OwnerEnv, "1") // PID 1 owns it: we are its descendant
	if _, on, _ := FromEnv(); on {
		t.Error("a child of a load's owner started another load")
	}
	t.Setenv(OwnerEnv, "")
	t.Setenv(Env, "lots")
	if _, _, err := FromEnv(); err == nil {
		t.Error("no error for an unknown value")
	}
}
