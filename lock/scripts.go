package lock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// One script per atomic operation; each file documents its KEYS, ARGV and
// return values. Script.Run sends EVALSHA and falls back to EVAL once when the
// server does not know the script yet.
var (
	//go:embed lua/lock_fenced.lua
	lockFencedSrc string
	//go:embed lua/unlock.lua
	unlockSrc string
	//go:embed lua/extend.lua
	extendSrc string
	//go:embed lua/pttl.lua
	pttlSrc string
	//go:embed lua/reentrant_lock.lua
	reentrantLockSrc string
	//go:embed lua/reentrant_unlock.lua
	reentrantUnlockSrc string
	//go:embed lua/reentrant_extend.lua
	reentrantExtendSrc string
	//go:embed lua/reentrant_pttl.lua
	reentrantPTTLSrc string
	//go:embed lua/rw_common.lua
	rwCommonSrc string
	//go:embed lua/rw_rlock.lua
	rwRLockSrc string
	//go:embed lua/rw_wlock.lua
	rwWLockSrc string
	//go:embed lua/rw_unlock.lua
	rwUnlockSrc string
	//go:embed lua/rw_extend.lua
	rwExtendSrc string
	//go:embed lua/rw_pttl.lua
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
