package peakewma

// The policy's JSON config, as the object under `peak_ewma_experimental` in a
// loadBalancingConfig entry: choiceCount (default 2, below 2 rejected, above 10 clamped to 10),
// decayTime (default "10s") and defaultRtt (default "0.030s"), both proto3 JSON durations > 0.
//
// Unknown fields are IGNORED, as grpc-go's own parsers do: balancer.ConfigParser's contract in
// grpc-go 1.33 says "For future compatibility reasons, unknown fields in the config should be
// ignored", and its parsers decode with encoding/json, which drops fields it does not know
// (grpclb), or with jsonpb's AllowUnknownFields (rls). lblab and the grpc-js port reject them.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Name is the policy's name in a service config.
const Name = "peak_ewma_experimental"

// MaxChoices is where choiceCount is clamped.
const MaxChoices = 10

// Config is a parsed config; durations in ns.
type Config struct {
	ChoiceCount int
	DecayTime   int64
	DefaultRtt  int64
}

// DefaultConfig is the config of `{}`.
var DefaultConfig = Config{ChoiceCount: 2, DecayTime: 10e9, DefaultRtt: 30e6}

// ConfigError names the field that is wrong.
type ConfigError struct {
	Field   string
	Message string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("%s.%s: %s", Name, e.Field, e.Message) }

var durationRe = regexp.MustCompile(`^(-?)([0-9]+)(?:\.([0-9]{1,9}))?s$`)

// ParseDuration parses a proto3 JSON duration ("10s", "0.030s") into ns.
func ParseDuration(text string) (int64, error) {
	m := durationRe.FindStringSubmatch(text)
	if m == nil {
		return 0, fmt.Errorf("`%s` is not a proto3 duration; write seconds with an `s` suffix, e.g. \"10s\" or \"0.030s\"", text)
	}
	secs, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil || secs > 315576000000 {
		return 0, fmt.Errorf("`%s` is longer than proto3's maximum of 315576000000s", text)
	}
	frac := int64(0)
	if m[3] != "" {
		frac, _ = strconv.ParseInt((m[3] + "000000000")[:9], 10, 64)
	}
	ns := secs*1e9 + frac
	if m[1] == "-" {
		ns = -ns
	}
	return ns, nil
}

// FormatDuration writes ns as the shortest proto3 JSON duration ("10s", "0.03s").
func FormatDuration(ns int64) string {
	secs, frac := ns/1e9, ns%1e9
	if frac == 0 {
		return fmt.Sprintf("%ds", secs)
	}
	return fmt.Sprintf("%d.%ss", secs, strings.TrimRight(fmt.Sprintf("%09d", frac), "0"))
}

// ParseConfig parses the policy's config object (nil or `null`: the defaults).
func ParseConfig(js []byte) (Config, error) {
	c := DefaultConfig
	js = bytes.TrimSpace(js)
	if len(js) == 0 || string(js) == "null" {
		return c, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(js, &obj); err != nil {
		return c, &ConfigError{"", fmt.Sprintf("the config must be a JSON object: %v", err)}
	}
	if raw, ok := obj["choiceCount"]; ok {
		var n float64
		if err := json.Unmarshal(raw, &n); err != nil || n != float64(int64(n)) || n < 0 || n > 4294967295 {
			return c, &ConfigError{"choiceCount", fmt.Sprintf("%s is not a whole number from 0 to 4294967295", raw)}
		}
		if n < 2 {
			return c, &ConfigError{"choiceCount", fmt.Sprintf("%d is below 2; choiceCount must be at least 2 (values above %d are clamped to %d)", int64(n), MaxChoices, MaxChoices)}
		}
		c.ChoiceCount = int(n)
		if c.ChoiceCount > MaxChoices {
			c.ChoiceCount = MaxChoices
		}
	}
	for _, f := range []struct {
		name string
		to   *int64
	}{{"decayTime", &c.DecayTime}, {"defaultRtt", &c.DefaultRtt}} {
		raw, ok := obj[f.name]
		if !ok {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return c, &ConfigError{f.name, fmt.Sprintf("%s is not a duration string; write e.g. \"10s\" or \"0.030s\"", raw)}
		}
		ns, err := ParseDuration(s)
		switch {
		case err != nil:
			return c, &ConfigError{f.name, err.Error()}
		case ns < 0:
			return c, &ConfigError{f.name, fmt.Sprintf("`%s` is negative; durations here must be >= 0s", s)}
		case ns == 0:
			return c, &ConfigError{f.name, "must be greater than 0s"}
		}
		*f.to = ns
	}
	return c, nil
}

// JSON is the normalized JSON form of a config.
func (c Config) JSON() map[string]interface{} {
	return map[string]interface{}{
		"choiceCount": c.ChoiceCount,
		"decayTime":   FormatDuration(c.DecayTime),
		"defaultRtt":  FormatDuration(c.DefaultRtt),
	}
}
