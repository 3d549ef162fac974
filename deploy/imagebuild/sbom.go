package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
	"unicode"
)

// SBOMInput is what the SBOM describes: one platform's image.
type SBOMInput struct {
	Image, Version string // image name, podchron's version
	OS, Arch       string
	Created        time.Time
	Binary         []byte               // the tracer
	BuildInfo      *buildinfo.BuildInfo // its build information (`go version -m`)
	CABundle       []byte               // nil: none in the image
	CAVersion      string               // the Debian ca-certificates version it comes from
}

// SPDX 2.3 JSON (https://spdx.github.io/spdx-spec/v2.3/), the fields used.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID                string            `json:"SPDXID"`
	Name                  string            `json:"name"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	Supplier              string            `json:"supplier,omitempty"`
	PackageFileName       string            `json:"packageFileName,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	Checksums             []spdxChecksum    `json:"checksums,omitempty"`
	LicenseConcluded      string            `json:"licenseConcluded"`
	LicenseDeclared       string            `json:"licenseDeclared"`
	CopyrightText         string            `json:"copyrightText"`
	SourceInfo            string            `json:"sourceInfo,omitempty"`
	Comment               string            `json:"comment,omitempty"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
	ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func purl(ref string) []spdxExternalRef {
	return []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: ref}}
}

// golangPURL is the package URL of a Go module version.
func golangPURL(path, version string) string {
	return "pkg:golang/" + path + "@" + strings.ReplaceAll(version, "+", "%2B")
}

// escapeModulePath is the module proxy's case encoding (golang.org/x/mod's
// module.EscapePath for valid paths): an upper-case letter is "!" and its
// lower case.
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// h1Hex turns a go.sum hash ("h1:" and the base64 of a SHA-256) into hex.
func h1Hex(sum string) (string, bool) {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return "", false
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != sha256.Size {
		return "", false
	}
	return hex.EncodeToString(raw), true
}

func spdxID(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// modulePackage is the SPDX package of a dependency module (its
// replacement when replaced: that is what was built).
func modulePackage(i int, m *debug.Module) (spdxPackage, error) {
	used := m
	var comment []string
	if m.Replace != nil {
		used = m.Replace
		comment = append(comment, fmt.Sprintf("replaces %s %s", m.Path, m.Version))
	}
	p := spdxPackage{
		SPDXID:                fmt.Sprintf("SPDXRef-gomod-%d-%s", i, spdxID(used.Path)),
		Name:                  used.Path,
		VersionInfo:           used.Version,
		DownloadLocation:      "NOASSERTION",
		LicenseConcluded:      "NOASSERTION",
		LicenseDeclared:       "NOASSERTION",
		CopyrightText:         "NOASSERTION",
		PrimaryPackagePurpose: "LIBRARY",
	}
	if used.Version != "" && used.Version != "(devel)" {
		p.DownloadLocation = "https://proxy.golang.org/" + escapeModulePath(used.Path) + "/@v/" + used.Version + ".zip"
		p.ExternalRefs = purl(golangPURL(used.Path, used.Version))
	}
	if used.Sum != "" {
		h, ok := h1Hex(used.Sum)
		if !ok {
			return spdxPackage{}, fmt.Errorf("module %s %s: go.sum hash %q is not an h1 hash", used.Path, used.Version, used.Sum)
		}
		// The go.sum hash: SHA-256 over the module's file list and files
		// (the checksum database's record), not over the .zip.
		p.Checksums = []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: h}}
		comment = append(comment, "go.sum "+used.Sum+" (the SHA256 checksum is this dirhash, in hex)")
	}
	p.Comment = strings.Join(comment, "; ")
	return p, nil
}

// SPDX returns the SPDX 2.3 JSON SBOM of one platform's image: the image
// contains the tracer (the main module, statically linked with the Go
// standard library and every dependency module the binary records) and the
// CA bundle (Debian's ca-certificates).
func SPDX(in SBOMInput) ([]byte, error) {
	bi := in.BuildInfo
	if bi == nil {
		return nil, fmt.Errorf("no build information")
	}
	binSum := sha256Hex(in.Binary)
	platform := in.OS + "/" + in.Arch
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3",
		DataLicense: "CC0-1.0",
		SPDXID:      "SPDXRef-DOCUMENT",
		Name:        fmt.Sprintf("%s %s", in.Image, platform),
		DocumentNamespace: fmt.Sprintf("https://github.com/podchron/podchron/spdx/%s/%s/%s",
			spdxID(in.Version), spdxID(in.Arch), binSum),
		CreationInfo: spdxCreationInfo{
			Created:  in.Created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: podchron-imagebuild (deploy/imagebuild)"},
		},
	}
	image := spdxPackage{
		SPDXID: "SPDXRef-image", Name: in.Image, VersionInfo: in.Version,
		DownloadLocation: "NOASSERTION", LicenseConcluded: "NOASSERTION", LicenseDeclared: "NOASSERTION",
		CopyrightText: "NOASSERTION", PrimaryPackagePurpose: "CONTAINER",
		Comment: "the " + platform + " image, FROM scratch: /tracer, /etc/passwd, /etc/group, the CA bundle and this SBOM; no base image",
	}
	var settings []string
	for _, s := range bi.Settings {
		settings = append(settings, s.Key+"="+s.Value)
	}
	tracerPkg := spdxPackage{
		SPDXID: "SPDXRef-podchron", Name: bi.Main.Path, VersionInfo: in.Version,
		PackageFileName:  "/tracer",
		DownloadLocation: "git+https://github.com/podchron/podchron",
		Checksums:        []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: binSum}},
		LicenseConcluded: "NOASSERTION", LicenseDeclared: "NOASSERTION", CopyrightText: "NOASSERTION",
		PrimaryPackagePurpose: "APPLICATION",
		Comment: fmt.Sprintf("the tracer binary (%s, %s); main module %s %s; build settings: %s",
			bi.Path, platform, bi.Main.Path, bi.Main.Version, strings.Join(settings, " ")),
		ExternalRefs: purl(golangPURL(bi.Main.Path, in.Version)),
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			tracerPkg.SourceInfo = "built from revision " + s.Value
		}
	}
	goVersion := strings.TrimPrefix(bi.GoVersion, "go")
	stdlib := spdxPackage{
		SPDXID: "SPDXRef-stdlib", Name: "stdlib", VersionInfo: bi.GoVersion,
		DownloadLocation: "https://go.dev/dl/" + bi.GoVersion + ".src.tar.gz",
		LicenseConcluded: "NOASSERTION", LicenseDeclared: "BSD-3-Clause", CopyrightText: "NOASSERTION",
		PrimaryPackagePurpose: "LIBRARY",
		Comment:               "the Go toolchain and standard library the tracer was built with",
		ExternalRefs:          purl("pkg:golang/stdlib@" + goVersion),
	}
	doc.Packages = append(doc.Packages, image, tracerPkg, stdlib)
	rel := func(a, typ, b string) {
		doc.Relationships = append(doc.Relationships, spdxRelationship{SPDXElementID: a, RelationshipType: typ, RelatedSPDXElement: b})
	}
	rel("SPDXRef-DOCUMENT", "DESCRIBES", "SPDXRef-image")
	rel("SPDXRef-image", "CONTAINS", "SPDXRef-podchron")
	rel("SPDXRef-podchron", "DEPENDS_ON", "SPDXRef-stdlib")
	for i, m := range bi.Deps {
		p, err := modulePackage(i, m)
		if err != nil {
			return nil, err
		}
		doc.Packages = append(doc.Packages, p)
		rel("SPDXRef-podchron", "DEPENDS_ON", p.SPDXID)
	}
	if in.CABundle != nil {
		ca := spdxPackage{
			SPDXID: "SPDXRef-ca-certificates", Name: "ca-certificates", VersionInfo: in.CAVersion,
			Supplier:         "Organization: Debian",
			PackageFileName:  DefaultCABundle,
			DownloadLocation: "NOASSERTION",
			Checksums:        []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: sha256Hex(in.CABundle)}},
			LicenseConcluded: "NOASSERTION", LicenseDeclared: "NOASSERTION", CopyrightText: "NOASSERTION",
			PrimaryPackagePurpose: "FILE",
			Comment:               "the build host's " + DefaultCABundle + " (update-ca-certificates from this package and the host's /etc/ca-certificates.conf); the checksum is the file's",
		}
		if in.CAVersion != "" {
			ca.ExternalRefs = purl("pkg:deb/debian/ca-certificates@" + strings.ReplaceAll(in.CAVersion, "+", "%2B") + "?arch=all")
		}
		doc.Packages = append(doc.Packages, ca)
		rel("SPDXRef-image", "CONTAINS", "SPDXRef-ca-certificates")
	}
	return json.MarshalIndent(doc, "", "  ")
}
