package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/svc-dev/svc/actors"
)

// staticConfigs configures n members on loopback. protoactor's static provider holds a
// package-level mutex through each member check and the pause after it, so the members of one
// process take turns: each checks its peers every n × MemberRefresh here, not every
// MemberRefresh as a member alone in its process does.
func staticConfigs(t *testing.T, n int) []Config {
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = addrPair(t)
	}
	cfgs := make([]Config, n)
	for i := range cfgs {
		cfgs[i] = Config{Name: "test", Provider: ProviderStatic, Addr: addrs[i], Peers: addrs,
			MemberRefresh: 300 * time.Millisecond, RequestTimeout: 5 * time.Second}
	}
	return cfgs
}

// TestStatic runs four members with the static provider on loopback. The subtests share them
// and run in order; the last two take members away (one leaves, one is killed).
func TestStatic(t *testing.T) {
	rec := newRecorder()
	ms := startMembers(t, rec, staticConfigs(t, 4))
	waitMembers(t, ms, 4)

	t.Run("one actor per identity", func(t *testing.T) {
		for i := range 20 {
			checkOneActor(t, ms, fmt.Sprintf("one-%d", i))
		}
	})

	t.Run("tell order", func(t *testing.T) {
		const n = 500
		ids := []string{"order-a", "order-b", "order-c", "order-d", "order-e"}
		var wg sync.WaitGroup
		for s, m := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range n {
					for _, id := range ids {
						tell(m.c, actors.KindSession, id, int64(s*1_000_000+i))
					}
				}
			}()
		}
		wg.Wait()
		for _, id := range ids {
			waitTold(t, rec, id, len(ms)*n)
			checkOrder(t, id, rec.toldTo(id), len(ms), n)
		}
	})

	t.Run("passivate and activate again", func(t *testing.T) {
		id := "passive"
		st := mustState(t, ms[0].c, actors.KindSession, id, "state")
		st2 := mustState(t, ms[1].c, actors.KindSession, id, "passivate")
		if st2.Activation != st.Activation {
			t.Fatalf("passivate reached activation %d, want %d", st2.Activation, st.Activation)
		}
		// Right after: a tell from another member, then (once it arrived: tells from two
		// members are not ordered with each other) a request from a third reach a fresh actor.
		tell(ms[2].c, actors.KindSession, id, 7)
		waitTold(t, rec, id, 1)
		st3 := mustState(t, ms[3].c, actors.KindSession, id, "state")
		if st3.Activation != st.Activation+1 || st3.Count != 2 || st3.Node != st.Node {
			t.Fatalf("after passivation: %+v, want activation %d on %s counting the tell and this request (2)", st3, st.Activation+1, st.Node)
		}
		if got := rec.toldTo(id); !slices.Equal(got, []int64{7}) {
			t.Fatalf("told %v, want [7]", got)
		}
		owner := memberAt(ms, st.Node)
		if !slices.Contains(owner.c.Active(actors.KindSession), id) {
			t.Fatalf("%s not active on its owner after activating again", id)
		}
	})

	t.Run("no tell lost across passivations", func(t *testing.T) {
		// Tells from every member while the actor passivates again and again.
		const n = 2000
		id := "churn"
		stop := make(chan struct{})
		var passivations int
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := askState(ctx, ms[1].c, actors.KindSession, id, "passivate")
				cancel()
				if err == nil {
					passivations++
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
		var tellers sync.WaitGroup
		for s, m := range ms {
			tellers.Add(1)
			go func() {
				defer tellers.Done()
				for i := range n {
					tell(m.c, actors.KindSession, id, int64(s*1_000_000+i))
					if i%20 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			}()
		}
		tellers.Wait()
		close(stop)
		wg.Wait()
		waitTold(t, rec, id, len(ms)*n)
		checkOrder(t, id, rec.toldTo(id), len(ms), n)
		t.Logf("%d tells from %d members arrived in order across %d passivations", len(ms)*n, len(ms), passivations)
		if passivations < 10 {
			t.Fatalf("only %d passivations during the tells", passivations)
		}
	})

	t.Run("message for another owner", func(t *testing.T) {
		// A member whose view differs from the sender's gets a message for an identity it does
		// not own: it answers, and the actor does not stay beside the owner's.
		id := ownedBy(t, ms, ms[2], actors.KindSession, 1)[0]
		rp := ms[1].c.newReplies([]string{""})
		defer rp.close()
		ms[1].c.router.route(actors.KindSession, id, wrapperspb.String("state"), rp.pids[""], 1)
		select {
		case r := <-rp.ch:
			if _, ok := r.msg.(*wrapperspb.StringValue); !ok {
				t.Fatalf("reply %T", r.msg)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no reply")
		}
		deadline := time.Now().Add(5 * time.Second)
		for slices.Contains(ms[1].c.Active(actors.KindSession), id) {
			if time.Now().After(deadline) {
				t.Fatalf("%s stays active on %s, which does not own it", id, ms[1].c.Addr())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !slices.Contains(ms[2].c.Active(actors.KindSession), id) {
			t.Fatalf("%s no longer active on its owner", id)
		}
	})

	t.Run("active count members owner", func(t *testing.T) {
		var ids []string
		for i := range 40 {
			id := fmt.Sprintf("app-%d", i)
			ids = append(ids, id)
			mustState(t, ms[i%len(ms)].c, actors.KindApp, id, "state")
		}
		total := 0
		for _, m := range ms {
			total += m.c.Count(actors.KindApp)
			if len(m.c.Active(actors.KindApp)) != m.c.Count(actors.KindApp) {
				t.Fatalf("%s: Active lists %d, Count says %d", m.c.Addr(), len(m.c.Active(actors.KindApp)), m.c.Count(actors.KindApp))
			}
		}
		if total != len(ids) {
			t.Fatalf("%d app actors live across members, want %d", total, len(ids))
		}
		perMember := map[string]int{}
		for _, id := range ids {
			owner, ok := ms[0].c.Owner(actors.KindApp, id)
			if !ok {
				t.Fatalf("no owner for %s", id)
			}
			for _, m := range ms[1:] {
				if o, _ := m.c.Owner(actors.KindApp, id); o != owner {
					t.Fatalf("%s: %s says %s owns it, %s says %s", id, ms[0].c.Addr(), owner, m.c.Addr(), o)
				}
			}
			if !slices.Contains(memberAt(ms, owner).c.Active(actors.KindApp), id) {
				t.Fatalf("%s is not active on its owner %s", id, owner)
			}
			perMember[owner]++
		}
		t.Logf("40 app identities over the members: %v", perMember)
		for _, m := range ms {
			list := m.c.Members()
			if len(list) != len(ms) {
				t.Fatalf("%s lists %d members: %+v", m.c.Addr(), len(list), list)
			}
			self := 0
			for _, mem := range list {
				if mem.Status != "alive" || mem.ID == "" || !slices.Equal(sorted(mem.Kinds), []string{"app", "session"}) {
					t.Fatalf("%s lists %+v", m.c.Addr(), mem)
				}
				if mem.Self {
					self++
					if mem.Address != m.c.Addr() {
						t.Fatalf("%s lists %s as itself", m.c.Addr(), mem.Address)
					}
				}
			}
			if self != 1 {
				t.Fatalf("%s lists %d members as itself", m.c.Addr(), self)
			}
		}
	})

	t.Run("ask all", func(t *testing.T) {
		for _, m := range ms {
			addr := m.c.Addr()
			m.c.Serve(func(ctx context.Context, msg proto.Message) (proto.Message, error) {
				s := msg.(*wrapperspb.StringValue).Value
				if s == "fail" {
					return nil, errors.New("failed on purpose")
				}
				return wrapperspb.String(addr + " " + s), nil
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res := ms[0].c.AskAll(ctx, wrapperspb.String("hello"))
		if len(res) != len(ms) {
			t.Fatalf("%d results, want %d: %v", len(res), len(ms), res)
		}
		for _, m := range ms {
			r := res[m.c.Addr()]
			if r.Err != nil || r.Reply.(*wrapperspb.StringValue).Value != m.c.Addr()+" hello" {
				t.Fatalf("%s answered %v, %v", m.c.Addr(), r.Reply, r.Err)
			}
		}
		reply, err := ms[1].c.AskMember(ctx, ms[2].c.Addr(), wrapperspb.String("one"))
		if err != nil || reply.(*wrapperspb.StringValue).Value != ms[2].c.Addr()+" one" {
			t.Fatalf("AskMember: %v, %v", reply, err)
		}
		if _, err := ms[1].c.AskMember(ctx, ms[2].c.Addr(), wrapperspb.String("fail")); err == nil || !strings.Contains(err.Error(), "failed on purpose") {
			t.Fatalf("AskMember of a failing handler: %v", err)
		}
		if _, err := ms[1].c.AskMember(ctx, "127.0.0.1:1", wrapperspb.String("x")); err == nil {
			t.Fatal("AskMember of a non-member succeeded")
		}
	})

	t.Run("large messages", func(t *testing.T) {
		// protoactor batches up to EndpointWriterBatchSize messages in one gRPC message, and a
		// gRPC server refuses messages over its MaxRecvMsgSize (4 MiB by default): a refused
		// batch breaks the connection and its messages are lost.
		id := ownedBy(t, ms, ms[1], actors.KindSession, 1)[0]
		const n, size = 400, 256 << 10
		body := make([]byte, size)
		for range n {
			ms[0].c.Tell(actors.KindSession, id, wrapperspb.Bytes(body))
		}
		waitTold(t, rec, id, n)
	})

	t.Run("graceful leave", func(t *testing.T) {
		leaver := ms[3]
		ids := ownedBy(t, ms, leaver, actors.KindApp, 10)
		start := time.Now()
		leaver.c.Shutdown(true)
		took := time.Since(start)
		rest := ms[:3]
		for _, m := range rest {
			if m.c.view.Load().has(leaver.c.Addr()) {
				t.Fatalf("%s still places identities on %s after it left", m.c.Addr(), leaver.c.Addr())
			}
		}
		for _, id := range ids {
			for _, m := range rest {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				st, err := askState(ctx, m.c, actors.KindApp, id, "state")
				cancel()
				if err != nil {
					t.Fatalf("%s right after its owner left: %v", id, err)
				}
				if st.Node == leaver.c.Addr() {
					t.Fatalf("%s still answered by the leaver", id)
				}
			}
		}
		t.Logf("graceful Shutdown took %s; the others placed its identities elsewhere when it returned", took.Round(time.Millisecond))
		ms = rest
		waitMembers(t, ms, 3) // the static provider drops it too
	})

	t.Run("member killed", func(t *testing.T) {
		victim := ms[2]
		ids := ownedBy(t, ms, victim, actors.KindApp, 10)
		survivors := ms[:2]
		start := time.Now()
		victim.c.kill()

		// Meanwhile, a node request to the dead member ends with an error within its context.
		var askErr error
		var askTook time.Duration
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			res := survivors[0].c.AskAll(ctx, wrapperspb.String("hello"))
			askTook = time.Since(start)
			if r := res[victim.c.Addr()]; r.Err == nil {
				askErr = fmt.Errorf("AskAll: the dead member answered %v", r.Reply)
			} else {
				t.Logf("AskAll right after the kill: the dead member's error came after %s: %v", askTook.Round(time.Millisecond), r.Err)
			}
		}()
		defer func() {
			wg.Wait()
			if askErr != nil {
				t.Error(askErr)
			}
			if askTook > 3*time.Second {
				t.Errorf("AskAll took %s with a 2 s context", askTook)
			}
		}()

		// Its identities come back on a survivor: each request waits (retrying) up to 15 s.
		var worst time.Duration
		for _, id := range ids {
			for _, m := range survivors {
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				st, err := askState(ctx, m.c, actors.KindApp, id, "state")
				cancel()
				if err != nil {
					t.Fatalf("%s after its owner died: %v (%s after the kill)", id, err, time.Since(start))
				}
				if st.Node == victim.c.Addr() {
					t.Fatalf("%s answered by the dead member", id)
				}
				worst = max(worst, time.Since(start))
			}
		}
		t.Logf("failover (static, member refresh %s): every identity of the killed member answered from a survivor %s after the kill", ms[0].c.cfg.MemberRefresh, worst.Round(time.Millisecond))
		if worst > 15*time.Second {
			t.Fatalf("failover took %s", worst)
		}
		waitMembers(t, survivors, 2)
	})
}

// waitTold waits until n told messages reached identity's actors.
func waitTold(t *testing.T, rec *recorder, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(rec.toldTo(id)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d told messages arrived", id, len(rec.toldTo(id)), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // and no more
	if got := len(rec.toldTo(id)); got != n {
		t.Fatalf("%s: %d told messages arrived, want %d", id, got, n)
	}
}

// ownedBy activates n identities of kind owned by m and returns them.
func ownedBy(t *testing.T, ms []*member, m *member, kind actors.Kind, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; len(ids) < n; i++ {
		id := fmt.Sprintf("owned-%s-%d", m.c.Addr(), i)
		if owner, _ := ms[0].c.Owner(kind, id); owner == m.c.Addr() {
			st := mustState(t, ms[0].c, kind, id, "state")
			if st.Node != m.c.Addr() {
				t.Fatalf("%s lives on %s, want %s", id, st.Node, m.c.Addr())
			}
			ids = append(ids, id)
		}
	}
	return ids
}

func memberAt(ms []*member, addr string) *member {
	for _, m := range ms {
		if m.c.Addr() == addr {
			return m
		}
	}
	panic("no member at " + addr)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestConfigErrors(t *testing.T) {
	sys := actors.NewSystem(testLog("SVC_TEST_PROTOACTOR_LOG", 0, true))
	defer sys.Shutdown()
	busy := addrPair(t)
	l, err := net.Listen("tcp", busy)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Provider: ProviderStatic, Addr: "127.0.0.1:7000", Peers: []string{"127.0.0.1:7000"}}, "no cluster name"},
		{Config{Name: "x", Provider: ProviderStatic, Addr: "7000", Peers: []string{"7000"}}, "bad address"},
		{Config{Name: "x", Provider: ProviderStatic, Addr: "127.0.0.1:7000", Peers: []string{"127.0.0.1:7002"}}, "must list this node"},
		{Config{Name: "x", Provider: "consul", Addr: "127.0.0.1:7000"}, "unknown provider"},
		{Config{Name: "x", Provider: ProviderEtcd, Addr: "127.0.0.1:7000"}, "needs etcd endpoints"},
		{Config{Name: "x", Provider: ProviderStatic, Addr: busy, Peers: []string{busy}}, "remoting address"},
		{Config{Name: "x", Provider: ProviderEtcd, Addr: addrPair(t), EtcdEndpoints: []string{"http://127.0.0.1:1"}}, "connect to etcd"},
	} {
		_, err := Start(sys, tc.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
}
