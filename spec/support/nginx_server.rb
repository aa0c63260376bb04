# frozen_string_literal: true

require "etc"
require "fileutils"
require "socket"
require "tmpdir"

# An nginx on 127.0.0.1 for end-to-end tests and the keep-alive benchmark, run as a child
# process with everything in a temporary directory (config, pid, logs, temp paths, files
# it serves), so it needs no root and leaves nothing behind. No RSpec in here: the bench
# workload uses it too.
#
#   server = NginxServer.start(<<~CONF, files: { "static/a.txt" => "hello" })
#     location /static/ { root %<root>s; }
#   CONF
#   server.port  # ... requests ...
#   server.stop
#
# The server block's body is a format string: %<root>s is the served-files directory,
# %<port>s the port, %<dir>s the temporary directory.
class NginxServer
  class Unavailable < StandardError; end

  # Debian's path (nginx-light); NGINX=/path/to/nginx for another one (only that one).
  BINARY_CANDIDATES = (ENV["NGINX"] ? [ENV["NGINX"]] : %w[/usr/sbin/nginx /usr/local/sbin/nginx]).freeze
  # Debian's nginx-light ships the echo module (libnginx-mod-http-echo) as a dynamic module.
  ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"
  START_TIMEOUT = 10 # seconds
  # Served files get this mtime, so Last-Modified and ETag are the same in every run
  # (the bench compares responses across processes).
  FILE_MTIME = Time.utc(2026, 1, 2, 3, 4, 5)

  attr_reader :port, :dir, :root

  def self.binary
    BINARY_CANDIDATES.find { |path| File.file?(path) && File.executable?(path) }
  end

  # Why nginx cannot run here, or nil.
  def self.unavailable_reason
    return "nginx not found (#{BINARY_CANDIDATES.join(', ')}; Debian package nginx-light)" unless binary
    return "the nginx echo module is missing (#{ECHO_MODULE}; Debian package nginx-light)" unless File.file?(ECHO_MODULE)

    nil
  end

  def self.start(server_body, files: {})
    new(server_body, files).tap(&:start)
  end

  def initialize(server_body, files)
    @server_body = server_body
    @files = files
  end

  # Port 0 is not an nginx option: take a free port from the kernel and hand it over.
  # Another process can grab it in between, so a bind failure is retried on a new port.
  def start
    reason = self.class.unavailable_reason
    raise Unavailable, reason if reason

    @dir = Dir.mktmpdir("rusty-nginx")
    @root = File.join(@dir, "root")
    # The workers may run as another user (nginx switches away from root): let them in.
    File.chmod(0o755, @dir)
    write_files
    3.times do
      @port = free_port
      File.write(File.join(@dir, "nginx.conf"), config)
      return self if spawn_and_wait
      raise Unavailable, "nginx did not start: #{log}" unless log.include?("Address already in use")
    end
    raise Unavailable, "nginx could not bind a port: #{log}"
  rescue StandardError
    stop
    raise
  end

  def stop
    if @pid
      begin
        Process.kill(:TERM, @pid)
        Process.wait(@pid)
      rescue Errno::ESRCH, Errno::ECHILD
        nil
      end
      @pid = nil
    end
    FileUtils.remove_entry(@dir) if @dir && File.directory?(@dir)
    @dir = nil
  end

  def log
    path = File.join(@dir, "error.log")
    File.exist?(path) ? File.read(path) : ""
  end

  private

  def write_files
    FileUtils.mkdir_p(@root)
    @files.each do |name, content|
      path = File.join(@root, name)
      FileUtils.mkdir_p(File.dirname(path))
      File.binwrite(path, content)
      File.utime(FILE_MTIME, FILE_MTIME, path)
    end
    FileUtils.chmod_R("a+rX", @root)
    %w[client_body proxy fastcgi uwsgi scgi].each { |t| FileUtils.mkdir_p(File.join(@dir, "temp", t)) }
    # Bodies of PUT/POST land in temp paths the workers write to.
    FileUtils.chmod_R(0o777, File.join(@dir, "temp"))
  end

  def free_port
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1]
  ensure
    server&.close
  end

  # Starts nginx in the foreground (`daemon off`), then waits until it accepts a
  # connection. false when it exited first (the error log says why).
  def spawn_and_wait
    File.write(File.join(@dir, "error.log"), "")
    @pid = Process.spawn(self.class.binary, "-p", "#{@dir}/", "-c", File.join(@dir, "nginx.conf"),
                         "-e", File.join(@dir, "error.log"),
                         in: File::NULL, out: File::NULL, err: [File.join(@dir, "stderr.log"), "w"])
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + START_TIMEOUT
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      return true if accepting?
      if Process.wait(@pid, Process::WNOHANG)
        @pid = nil
        File.write(File.join(@dir, "error.log"), File.read(File.join(@dir, "stderr.log")), mode: "a")
        return false
      end
      sleep 0.02
    end
    raise Unavailable, "nginx did not accept connections within #{START_TIMEOUT}s: #{log}"
  end

  def accepting?
    TCPSocket.new("127.0.0.1", @port).close
    true
  rescue SystemCallError
    false
  end

  # When the master runs as root its workers switch to `user` (nobody by default, which
  # could not read a 0700 temporary directory); run them as ourselves instead.
  def user_directive
    return "" unless Process.euid.zero?

    "user #{Etc.getpwuid(Process.euid).name} #{Etc.getgrgid(Process.egid).name};"
  end

  def config
    paths = { root: @root, port: @port, dir: @dir }
    <<~CONF
      load_module "#{ECHO_MODULE}";
      #{user_directive}
      daemon off;
      master_process on;
      worker_processes 1;
      pid "#{@dir}/nginx.pid";
      error_log "#{@dir}/error.log" warn;
      events { worker_connections 64; }
      http {
        access_log off;
        client_body_temp_path "#{@dir}/temp/client_body";
        proxy_temp_path "#{@dir}/temp/proxy";
        fastcgi_temp_path "#{@dir}/temp/fastcgi";
        uwsgi_temp_path "#{@dir}/temp/uwsgi";
        scgi_temp_path "#{@dir}/temp/scgi";
        types { text/html html; text/plain txt; application/json json; application/octet-stream bin; }
        default_type text/plain;
        server {
          listen 127.0.0.1:#{@port};
          server_name localhost;
      #{format(@server_body, **paths).gsub(/^/, '    ')}
        }
      }
    CONF
  end
end
