package main
import (
 _ "github.com/asynkron/protoactor-go/actor"
 _ "github.com/ClickHouse/clickhouse-go/v2"
 _ "github.com/go-chi/chi/v5"
 _ "github.com/dgraph-io/badger/v4"
 _ "github.com/jackc/pgx/v5"
 _ "github.com/google/uuid"
 _ "github.com/pressly/goose/v3"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/golang-jwt/jwt/v5"
 _ "github.com/minio/minio-go/v7"
 _ "google.golang.org/protobuf/proto"
)
func main(){}
