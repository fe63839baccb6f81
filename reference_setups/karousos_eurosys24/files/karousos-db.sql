-- The databases and tables the Dockerfile creates for Karousos (the README lists the same).
CREATE DATABASE test;
CREATE DATABASE wiki;
USE test;
CREATE TABLE inventory (id_type varchar(255), quantity int, updateTime DATETIME, visible tinyint(1),
  ionRequestID longtext, ionTxID longtext, ionTxNum int, PRIMARY KEY (id_type));
CREATE TABLE stackTrace (id_hash varchar(255), trace longtext, frequency int,
  ionRequestID longtext, ionTxID longtext, ionTxNum int, PRIMARY KEY (id_hash));
-- Karousos' scripts connect as root with the password 1234.
ALTER USER 'root'@'localhost' IDENTIFIED BY '1234';
