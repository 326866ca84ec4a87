package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/auth"
	"github.com/seckill/seckill/internal/order"
)

func tokenCmd(e *env) *cobra.Command {
	var users []string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Mint HS256 shopper tokens for load tests and trials",
		Long: `token prints one JWT per --user, signed with auth.jwt_secret (HS256) and
carrying the shopper id in auth.jwt_user_claim, exp = now + --ttl, and iss
and aud when auth.jwt_issuer and auth.jwt_audience are set: what a server in
jwt mode with the same configuration accepts. Production tokens come from the
shop's identity service.`,
		Example: `  export SECKILL_AUTH_MODE=jwt SECKILL_AUTH_JWT_SECRET=$(openssl rand -hex 32)   # the servers' secret
  seckill token --user alice --ttl 1h
  seckill token --user alice --user bob                # one token per line`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if len(users) == 0 {
				return usageError{errors.New("--user is required")}
			}
			for _, u := range users {
				if !order.ValidUserID(u) {
					return usageError{fmt.Errorf("--user %q: 1-64 letters, digits or - _ . : @", u)}
				}
			}
			if ttl <= 0 {
				return usageError{errors.New("--ttl must be above zero, e.g. 1h")}
			}
			cfg, _, err := e.load()
			if err != nil {
				return err
			}
			if cfg.Auth.JWTSecret == "" {
				return usageError{errors.New("token needs auth.jwt_secret (SECKILL_AUTH_JWT_SECRET, with SECKILL_AUTH_MODE=jwt)")}
			}
			now := time.Now()
			for _, u := range users {
				tok, err := auth.Mint(cfg.Auth, u, ttl, now)
				if err != nil {
					return err
				}
				if _, err := fmt.Fprintln(e.stdout, tok); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&users, "user", nil, "shopper id to mint a token for (repeat for several, one token per line)")
	cmd.Flags().DurationVar(&ttl, "ttl", time.Hour, "how long the token is valid")
	return cmd
}
