# frozen_string_literal: true

# Net::HTTP end to end: GET requests on one kept-alive connection to an nginx on
# 127.0.0.1 that each worker process starts for itself (spec/support/nginx_server.rb;
# Debian nginx-light). 1e9 / (ns per op) is requests per second. The server shares the
# machine's cores with the client, so the codec's share of the time is smaller here than
# in the net_http-response-parse row: this is what an application would see.
module Bench
  module NetHttpKeepAlive
    NGINX_HELPER = File.expand_path("../../spec/support/nginx_server", __dir__)

    # A 900-byte page (under gzip_min_length: a Content-Length body) and a ~3 KB JSON
    # document from the echo module (no length: chunked, gzipped, inflated by Net::HTTP)
    # with the headers an application adds.
    SERVER = <<~CONF
      keepalive_requests 100000000;
      keepalive_timeout 3600s;
      gzip on;
      gzip_types application/json;
      gzip_min_length 1000;
      location /static/ { root %<root>s; }
      location = /api/items {
        default_type application/json;
        add_header Cache-Control "private, max-age=0";
        add_header Set-Cookie "session=abc123; Path=/; HttpOnly";
        add_header Set-Cookie "theme=dark; Path=/";
        add_header X-Request-Id "req-0001";
        echo '%<json>s';
      }
    CONF

    module_function

    def page
      "<!doctype html>\n<title>bench</title>\n#{(1..20).map { |i| "<p>paragraph #{i} of a small page</p>\n" }.join}"
        .ljust(900, " ")
    end

    def json
      items = (1..40).map { |i| %({"id":#{i},"name":"item #{i}","tags":["a","b"],"price":#{i * 3}.5}) }
      %({"items":[#{items.join(',')}],"total":40})
    end

    # Starts nginx (stopped when the worker exits) and returns a started Net::HTTP.
    def connection
      require NGINX_HELPER
      server = NginxServer.start(format(SERVER, root: "%<root>s", json: json),
                                 files: { "static/page.html" => page })
      at_exit { server.stop }
      http = Net::HTTP.new("127.0.0.1", server.port)
      http.keep_alive_timeout = 3600 # the parent may pause between output check and timing
      http.start
    end

    # The response as bytes, without the Date header (it changes every second).
    # to_hash and body do not go through the codec's capitalisation.
    def summary(res)
      [res.code, res.message, res.http_version, res.to_hash.reject { |k, _| k == "date" }, res.body].inspect
    end
  end
end

Bench.define(:net_http, requires: %w[net/http], source: "keep-alive GETs against nginx on 127.0.0.1") do
  workload "net_http-keepalive-get-static",
           setup: -> { Bench::NetHttpKeepAlive.connection },
           op: "input.request(Net::HTTP::Get.new('/static/page.html'))",
           output: ->(res) { Bench::NetHttpKeepAlive.summary(res) },
           round_trip: true
  workload "net_http-keepalive-get-chunked-gzip",
           setup: -> { Bench::NetHttpKeepAlive.connection },
           op: "input.request(Net::HTTP::Get.new('/api/items'))",
           output: ->(res) { Bench::NetHttpKeepAlive.summary(res) },
           round_trip: true
end
