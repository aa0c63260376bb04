# frozen_string_literal: true

require "socket"

# A TCP server on 127.0.0.1 that answers every request with fixed bytes chosen by the
# request path, then closes the connection: for responses no real server would send
# (malformed status lines, headers, chunk sizes, early EOF).
#
#   server = CannedHttpServer.start("/bad" => "HTTP/1.1 abc\r\n\r\n")
#   Net::HTTP.get(URI("http://127.0.0.1:#{server.port}/bad"))  # raises
#   server.stop
#
# A response given as an Array of Strings is written piece by piece with a short pause
# between pieces, so the client's reads (Net::BufferedIO) end mid-line and mid-chunk.
# Unknown paths get a 404. Each connection is served by its own thread; the request
# head (and a Content-Length body) is read before answering so that the client never
# sees a reset while still writing.
class CannedHttpServer
  attr_reader :port

  PAUSE = 0.002 # seconds between the pieces of a response

  def self.start(responses)
    new(responses).tap(&:start)
  end

  def initialize(responses)
    @responses = responses.transform_values { |r| Array(r).map(&:b) }
  end

  def start
    @server = TCPServer.new("127.0.0.1", 0)
    @port = @server.addr[1]
    @thread = Thread.new { accept_loop }
    self
  end

  def stop
    @server&.close
    @thread&.join
  end

  private

  def accept_loop
    loop do
      client = @server.accept
      Thread.new(client) { |c| serve(c) }
    end
  rescue IOError, SystemCallError
    nil # closed by stop
  end

  def serve(client)
    path = read_request(client)
    pieces = @responses.fetch(path) { ["HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"] }
    client.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1)
    pieces.each_with_index do |piece, i|
      sleep PAUSE if i.positive?
      client.write(piece)
    end
  rescue IOError, SystemCallError
    nil # the client gave up first: it has its error already
  ensure
    client.close
  end

  # The request path; the head and a Content-Length body are consumed.
  def read_request(client)
    path = client.gets.to_s.split(" ")[1]
    length = 0
    while (line = client.gets) && line != "\r\n" && line != "\n"
      length = line[/\d+/].to_i if line.match?(/\Acontent-length:/i)
    end
    client.read(length) if length.positive?
    path
  end
end
