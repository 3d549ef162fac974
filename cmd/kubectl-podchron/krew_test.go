package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestKrewManifest renders .krew.yaml as krew-release-bot
// would for a tag and checks it is a krew Plugin for the four platforms,
// each archive at that release.
func TestKrewManifest(t *testing.T) {
	raw, err := os.ReadFile("../../.krew.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const tag = "v1.2.3"
	sha := strings.Repeat("0", 64)
	addURI := regexp.MustCompile(`\{\{ addURIAndSha "([^"]+)" \.TagName \}\}`)
	s := addURI.ReplaceAllStringFunc(string(raw), func(m string) string {
		u := addURI.FindStringSubmatch(m)[1]
		return "uri: " + u + "\n      sha256: " + sha
	})
	s = strings.ReplaceAll(s, "{{ .TagName }}", tag)
	if strings.Contains(s, "{{") {
		t.Fatalf("template fields left:\n%s", s)
	}
	var m struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			Version   string
			Platforms []struct {
				Selector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				}
				URI, Sha256, Bin string
			}
		}
	}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "podchron" || m.Spec.Version != tag {
		t.Fatalf("manifest head: %+v", m)
	}
	var got []string
	for _, p := range m.Spec.Platforms {
		osArch := p.Selector.MatchLabels["os"] + "_" + p.Selector.MatchLabels["arch"]
		got = append(got, osArch)
		want := "https://github.com/podchron/podchron/releases/download/" + tag + "/kubectl-podchron_" + tag + "_" + osArch + ".tar.gz"
		if p.URI != want || p.Sha256 != sha || p.Bin != "kubectl-podchron" {
			t.Errorf("%s: uri %q sha256 %q bin %q; want uri %q", osArch, p.URI, p.Sha256, p.Bin, want)
		}
	}
	slices.Sort(got)
	if want := []string{"darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64"}; !slices.Equal(got, want) {
		t.Fatalf("platforms %v, want %v", got, want)
	}
}
