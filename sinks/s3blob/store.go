// Package s3blob is the sinks.BlobStore on an S3-compatible server (AWS S3, MinIO, versitygw,
// ...). Clients upload and download with presigned URLs, so blob bytes never pass through svc.
//
// Object names are the keys with a "~" appended (see objectName): servers that keep objects
// as files (MinIO, versitygw posix) cannot otherwise hold both "a" and "a/b", which are both
// valid keys.
package s3blob

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/svc-dev/svc/sinks"
)

// Config says where the bucket is.
type Config struct {
	Endpoint  string // host[:port] svc reaches the server at
	Region    string // default us-east-1
	Bucket    string
	AccessKey string
	SecretKey string
	UseSSL    bool
	// PublicEndpoint is where clients reach the server when that differs from Endpoint (svc on
	// a private network, SDKs on the internet): host[:port], using UseSSL's scheme, or a URL
	// like https://s3.example.com. Presigned URLs are signed for this host.
	PublicEndpoint string
}

// Presigned URLs live one second to seven days: the limits of S3's signature version 4.
const (
	minTTL = time.Second
	maxTTL = 7 * 24 * time.Hour
)

// partSize bounds the memory a Put of unknown size buffers; minio-go's default for an unknown
// size is hundreds of MiB per part.
const partSize = 16 << 20

// Store is a bucket. It is safe for concurrent use.
type Store struct {
	client  *minio.Client // svc's own requests
	presign *minio.Client // signs URLs for the public endpoint; client when there is none
	bucket  string
}

// New connects to the server and creates the bucket when it does not exist.
func New(ctx context.Context, c Config) (*Store, error) {
	if c.Endpoint == "" || c.Bucket == "" {
		return nil, fmt.Errorf("s3blob: %w: endpoint and bucket are required", sinks.ErrInvalid)
	}
	if c.Region == "" {
		// Naming the region spares a bucket-location lookup before every request and lets
		// presigning work without a network round trip.
		c.Region = "us-east-1"
	}
	client, err := newClient(c.Endpoint, c.UseSSL, c)
	if err != nil {
		return nil, err
	}
	s := &Store{client: client, presign: client, bucket: c.Bucket}
	if c.PublicEndpoint != "" {
		host, secure, err := parseEndpoint(c.PublicEndpoint, c.UseSSL)
		if err != nil {
			return nil, err
		}
		if s.presign, err = newClient(host, secure, c); err != nil {
			return nil, err
		}
	}
	if err := s.ensureBucket(ctx, c.Region); err != nil {
		return nil, err
	}
	return s, nil
}

func newClient(endpoint string, secure bool, c Config) (*minio.Client, error) {
	client, err := minio.New(endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure: secure,
		Region: c.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("s3blob: %w: endpoint %q: %w", sinks.ErrInvalid, endpoint, err)
	}
	return client, nil
}

// parseEndpoint accepts host[:port] or an http(s) URL without a path.
func parseEndpoint(e string, useSSL bool) (host string, secure bool, err error) {
	if !strings.Contains(e, "://") {
		return e, useSSL, nil
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return "", false, fmt.Errorf("s3blob: %w: public endpoint %q must be host[:port] or an http(s) URL without a path", sinks.ErrInvalid, e)
	}
	return u.Host, u.Scheme == "https", nil
}

func (s *Store) ensureBucket(ctx context.Context, region string) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("s3blob: check bucket %q: %w", s.bucket, err)
	}
	if ok {
		return nil
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: region})
	if err != nil && minio.ToErrorResponse(err).Code != minio.BucketAlreadyOwnedByYou {
		return fmt.Errorf("s3blob: create bucket %q: %w", s.bucket, err)
	}
	return nil
}

// Put uploads the blob; size is its exact length, or -1 when unknown.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := sinks.CheckBlobKey(key); err != nil {
		return err
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	if size < 0 {
		opts.PartSize = partSize
	}
	if _, err := s.client.PutObject(ctx, s.bucket, objectName(key), r, size, opts); err != nil {
		return fmt.Errorf("s3blob: put %q: %w", key, err)
	}
	return nil
}

// Delete removes the object; S3 answers a missing key like a deleted one.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := sinks.CheckBlobKey(key); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, objectName(key), minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("s3blob: delete %q: %w", key, err)
	}
	return nil
}

// Get returns the object's body, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := sinks.CheckBlobKey(key); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, objectName(key), minio.GetObjectOptions{})
	if err == nil {
		// GetObject is lazy: Stat sends the request, so a missing key shows here.
		_, err = obj.Stat()
	}
	if err != nil {
		if obj != nil {
			obj.Close()
		}
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, fmt.Errorf("s3blob: blob %q: %w", key, sinks.ErrNotFound)
		}
		return nil, fmt.Errorf("s3blob: get %q: %w", key, err)
	}
	return obj, nil
}

// SignUpload presigns a PUT. It signs no header beyond Host, so Headers is empty. ttl must be
// whole seconds between one second and seven days (shorter parts are dropped).
func (s *Store) SignUpload(ctx context.Context, key string, ttl time.Duration) (sinks.Upload, error) {
	if err := sinks.CheckBlobKey(key); err != nil {
		return sinks.Upload{}, err
	}
	if err := checkTTL(ttl); err != nil {
		return sinks.Upload{}, err
	}
	u, err := s.presign.PresignedPutObject(ctx, s.bucket, objectName(key), ttl)
	if err != nil {
		return sinks.Upload{}, fmt.Errorf("s3blob: presign upload %q: %w", key, err)
	}
	exp, err := expiresAt(u)
	if err != nil {
		return sinks.Upload{}, fmt.Errorf("s3blob: presign upload %q: %w", key, err)
	}
	return sinks.Upload{URL: u.String(), Headers: map[string]string{}, ExpiresAt: exp}, nil
}

// SignDownload presigns a GET.
func (s *Store) SignDownload(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := sinks.CheckBlobKey(key); err != nil {
		return "", err
	}
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	u, err := s.presign.PresignedGetObject(ctx, s.bucket, objectName(key), ttl, nil)
	if err != nil {
		return "", fmt.Errorf("s3blob: presign download %q: %w", key, err)
	}
	return u.String(), nil
}

func checkTTL(ttl time.Duration) error {
	if ttl < minTTL || ttl > maxTTL {
		return fmt.Errorf("s3blob: %w: URL lifetime %v must be between %v and %v", sinks.ErrInvalid, ttl, minTTL, maxTTL)
	}
	return nil
}

// expiresAt reads the expiry the server will enforce from the signed URL itself: the signing
// time (whole seconds) plus X-Amz-Expires.
func expiresAt(u *url.URL) (time.Time, error) {
	q := u.Query()
	date, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return time.Time{}, fmt.Errorf("presigned URL has no valid X-Amz-Date: %w", err)
	}
	secs, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	if err != nil {
		return time.Time{}, fmt.Errorf("presigned URL has no valid X-Amz-Expires: %w", err)
	}
	return date.Add(time.Duration(secs) * time.Second), nil
}

// Ping checks that the bucket is reachable and exists.
func (s *Store) Ping(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("s3blob: ping: %w", err)
	}
	if !ok {
		return fmt.Errorf("s3blob: ping: bucket %q does not exist", s.bucket)
	}
	return nil
}

// maxSegment is the longest path segment objectName leaves whole; filesystems allow 255 bytes
// per name, keys allow 512.
const maxSegment = 200

// objectName maps a valid key to its object name, one to one. Filesystem-backed servers (MinIO,
// versitygw posix) turn "/" into directories, so a file cannot also be a directory, "" and "."
// segments vanish, and a segment longer than 255 bytes cannot be stored. So: every name ends in
// "~" (a directory segment never does), inner "" and "." segments become "~e" and "~d", and a
// segment longer than maxSegment is cut into directories marked "~c". Keys never hold "~", so no
// two keys share a name, and presigned URL paths hold no "//" or "/./" that a proxy would clean
// away. Ordinary keys only gain the "~".
func objectName(key string) string {
	if plainKey(key) {
		return key + "~"
	}
	var b strings.Builder
	b.Grow(len(key) + 8)
	segs := strings.Split(key, "/")
	last := len(segs) - 1
	for i, seg := range segs {
		if i > 0 {
			b.WriteByte('/')
		}
		switch {
		case i < last && seg == "":
			b.WriteString("~e")
			continue
		case i < last && seg == ".":
			b.WriteString("~d")
			continue
		}
		for len(seg) > maxSegment {
			b.WriteString(seg[:maxSegment])
			b.WriteString("~c/")
			seg = seg[maxSegment:]
		}
		b.WriteString(seg)
	}
	b.WriteByte('~')
	return b.String()
}

// plainKey reports whether key has no empty or "." inner segment and no segment longer than
// maxSegment.
func plainKey(key string) bool {
	start := 0
	for i := 0; i <= len(key); i++ {
		if i < len(key) && key[i] != '/' {
			continue
		}
		seg := key[start:i]
		if len(seg) > maxSegment || i < len(key) && (seg == "" || seg == ".") {
			return false
		}
		start = i + 1
	}
	return true
}

var _ sinks.BlobStore = (*Store)(nil)
