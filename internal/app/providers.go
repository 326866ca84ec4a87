package app

import (
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/httpapi"
	"github.com/seckill/seckill/internal/payment/alipay"
	"github.com/seckill/seckill/internal/payment/wechatpay"
)

// providerVerifiers returns the verifier of Alipay's notifications in
// payment.mode alipay, of WeChat Pay's in wechatpay, and neither in the
// other modes. The keys were checked when the configuration was loaded; an
// error here is a Config built otherwise, and names its key.
func providerVerifiers(p config.Payment) (ali, wx httpapi.NotificationVerifier, err error) {
	switch p.Mode {
	case config.PaymentAlipay:
		keys, err := p.Alipay.PublicKeys()
		if err != nil {
			return nil, nil, err
		}
		v, err := alipay.NewVerifier(p.Alipay.AppID, keys)
		if err != nil {
			return nil, nil, err
		}
		return v, nil, nil
	case config.PaymentWeChatPay:
		keys, err := p.WeChatPay.PlatformKeys()
		if err != nil {
			return nil, nil, err
		}
		v, err := wechatpay.NewVerifier(wechatpay.Options{MchID: p.WeChatPay.MchID, APIv3Key: []byte(p.WeChatPay.APIv3Key), PlatformKeys: keys})
		if err != nil {
			return nil, nil, err
		}
		return nil, v, nil
	}
	return nil, nil, nil
}
