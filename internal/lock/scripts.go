package lock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// One script per atomic operation; each file documents its KEYS, ARGV and
// return values. Script.Run sends EVALSHA and falls back to EVAL once when the
// server does not know the script yet.
var (
	//go:embed scripts/lock_fenced.lua
	lockFencedSrc string
	//go:embed scripts/unlock.lua
	unlockSrc string
	//go:embed scripts/extend.lua
	extendSrc string
	//go:embed scripts/pttl.lua
	pttlSrc string
	//go:embed scripts/reentrant_lock.lua
	reentrantLockSrc string
	//go:embed scripts/reentrant_unlock.lua
	reentrantUnlockSrc string
	//go:embed scripts/reentrant_extend.lua
	reentrantExtendSrc string
	//go:embed scripts/reentrant_pttl.lua
	reentrantPTTLSrc string
	//go:embed scripts/rw_common.lua
	rwCommonSrc string
	//go:embed scripts/rw_rlock.lua
	rwRLockSrc string
	//go:embed scripts/rw_wlock.lua
	rwWLockSrc string
	//go:embed scripts/rw_unlock.lua
	rwUnlockSrc string
	//go:embed scripts/rw_extend.lua
	rwExtendSrc string
	//go:embed scripts/rw_pttl.lua
	rwPTTLSrc string

	lockFencedScript      = redis.NewScript(lockFencedSrc)
	unlockScript          = redis.NewScript(unlockSrc)
	extendScript          = redis.NewScript(extendSrc)
	pttlScript            = redis.NewScript(pttlSrc)
	reentrantLockScript   = redis.NewScript(reentrantLockSrc)
	reentrantUnlockScript = redis.NewScript(reentrantUnlockSrc)
	reentrantExtendScript = redis.NewScript(reentrantExtendSrc)
	reentrantPTTLScript   = redis.NewScript(reentrantPTTLSrc)
	rwRLockScript         = redis.NewScript(rwCommonSrc + rwRLockSrc)
	rwWLockScript         = redis.NewScript(rwCommonSrc + rwWLockSrc)
	rwUnlockScript        = redis.NewScript(rwUnlockSrc)
	rwExtendScript        = redis.NewScript(rwExtendSrc)
	rwPTTLScript          = redis.NewScript(rwPTTLSrc)
)
